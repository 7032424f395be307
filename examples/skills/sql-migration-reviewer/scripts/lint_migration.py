#!/usr/bin/env python3
"""Heuristic linter for SQL schema migrations (PostgreSQL and SQLite).

Flags statements that take long or strong locks, rewrite tables, lose data,
break code that is still running during a deploy, or fail outright on a
non-empty table. It reads SQL text only: it does not connect to a database,
so it cannot know table sizes. Treat every finding as a question for the
reviewer, not a verdict.

Usage:
    lint_migration.py [--dialect postgres|sqlite] [--assume-transaction]
                      [--ignore RULE,...] [--json] FILE.sql [FILE.sql ...]

Suppress a finding for one statement with a comment inside or right above it:
    -- lint-ignore: create-index-not-concurrent
    -- lint-ignore            (all rules for that statement)

Exit codes: 0 no findings, 1 findings, 2 usage or read error.
Standard library only; Python 3.8+.
"""

import argparse
import json
import re
import sys

IDENT = r'(?:"[^"]+"|[A-Za-z_][\w$]*)(?:\.(?:"[^"]+"|[A-Za-z_][\w$]*))?'
VOLATILE_DEFAULT = re.compile(
    r"\b(RANDOM|GEN_RANDOM_UUID|UUID_GENERATE_V[1-4]|CLOCK_TIMESTAMP|TIMEOFDAY|NEXTVAL|"
    r"TXID_CURRENT|STATEMENT_TIMESTAMP)\s*\(")
SQLITE_NONCONST_DEFAULT = re.compile(
    r"\bDEFAULT\s+(\(|CURRENT_TIMESTAMP\b|CURRENT_DATE\b|CURRENT_TIME\b)")

ALL_RULES = {
    "add-column-not-null-no-default", "add-column-rewrite", "create-index-not-concurrent",
    "concurrently-in-transaction", "drop-index-not-concurrent", "drop-table", "drop-column",
    "drop-object", "truncate", "alter-column-type", "alter-type", "set-not-null",
    "constraint-not-valid", "add-unique-constraint", "rename", "backfill", "lock-table",
    "table-rewrite", "missing-lock-timeout", "sqlite-unsupported", "sqlite-pragma-in-transaction",
}


class Statement:
    def __init__(self, code, raw, line, comments):
        self.code = code            # SQL with comments removed, literals blanked
        self.line = line            # 1-based line where the statement starts
        self.comments = comments    # text of comments inside or right before it
        self.norm = re.sub(r"\s+", " ", code).strip()
        self.upper = self.norm.upper()
        self.display = re.sub(r"\s+", " ", raw).strip()  # literals kept, for messages

    def ignored(self, rule):
        for comment in self.comments:
            match = re.search(r"lint-ignore(?::\s*([\w\-,\s]+))?", comment)
            if match:
                if not match.group(1):
                    return True
                names = {n.strip() for n in match.group(1).split(",")}
                if rule in names:
                    return True
        return False


def split_statements(sql):
    """Split SQL into statements, skipping comments and blanking literals.

    Handles '...' (with '' escapes, and E'..' backslash escapes), "identifiers",
    $tag$ dollar quotes $tag$, -- and nested /* */ comments, and SQLite
    CREATE TRIGGER ... BEGIN ...; END bodies.
    """
    statements = []
    code, raw, comments = [], [], []
    start_line = None
    line = 1
    i, n = 0, len(sql)

    def flush():
        nonlocal code, raw, comments, start_line
        text = "".join(code)
        if text.strip():
            statements.append(Statement(text, "".join(raw), start_line or line, comments))
        code, raw, comments, start_line = [], [], [], None

    def mark_start():
        nonlocal start_line
        if start_line is None:
            start_line = line

    while i < n:
        ch = sql[i]
        nxt = sql[i + 1] if i + 1 < n else ""
        if ch == "-" and nxt == "-":
            end = sql.find("\n", i)
            end = n if end == -1 else end
            comments.append(sql[i + 2:end])
            i = end
            continue
        if ch == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if sql.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif sql.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            comments.append(sql[i + 2:j - 2])
            line += sql.count("\n", i, j)
            code.append(" ")
            raw.append(" ")
            i = j
            continue
        if ch == "'":
            mark_start()
            backslash = i > 0 and sql[i - 1] in "eE" and (i < 2 or not sql[i - 2].isalnum())
            j = i + 1
            while j < n:
                if backslash and sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == "'":
                    if j + 1 < n and sql[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            line += sql.count("\n", i, j + 1)
            code.append("''")
            raw.append(sql[i:j + 1])
            i = j + 1
            continue
        if ch == '"':
            mark_start()
            j = sql.find('"', i + 1)
            j = n - 1 if j == -1 else j
            line += sql.count("\n", i, j + 1)
            code.append(sql[i:j + 1])
            raw.append(sql[i:j + 1])
            i = j + 1
            continue
        if ch == "$":
            match = re.match(r"\$([A-Za-z_][\w]*)?\$", sql[i:])
            if match:
                mark_start()
                tag = match.group(0)
                end = sql.find(tag, i + len(tag))
                end = n if end == -1 else end + len(tag)
                line += sql.count("\n", i, end)
                code.append("$$ $$")
                raw.append("%s ... %s" % (tag, tag))
                i = end
                continue
        if ch == ";":
            text = re.sub(r"\s+", " ", "".join(code)).strip().upper()
            in_trigger_body = (re.match(r"CREATE (TEMP\w* )?TRIGGER\b", text)
                               and re.search(r"\bBEGIN\b", text)
                               and not re.search(r"\bEND$", text))
            if in_trigger_body:
                code.append(ch)
                raw.append(ch)
                i += 1
                continue
            flush()
            i += 1
            continue
        if ch == "\n":
            line += 1
        elif not ch.isspace():
            mark_start()
        code.append(ch)
        raw.append(ch)
        i += 1
    flush()
    return statements


def split_top_level(text, sep=","):
    """Split on sep outside parentheses."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def table_key(name):
    return name.replace('"', "").lower()


class Linter:
    def __init__(self, dialect, assume_transaction, ignore):
        self.dialect = dialect
        self.in_transaction = assume_transaction
        self.assume_transaction = assume_transaction
        self.ignore = ignore
        self.created_tables = set()
        self.pending_checks = {}      # (table, constraint) -> column, for CHECK (c IS NOT NULL) NOT VALID
        self.not_null_checked = set() # (table, column) with a validated CHECK (c IS NOT NULL)
        self.lock_timeout_set = False
        self.lock_timeout_reported = False
        self.findings = []

    @property
    def pg(self):
        return self.dialect == "postgres"

    def add(self, stmt, rule, severity, message):
        if rule in self.ignore or stmt.ignored(rule):
            return
        text = stmt.display
        excerpt = text if len(text) <= 110 else text[:107] + "..."
        self.findings.append({"line": stmt.line, "severity": severity, "rule": rule,
                              "message": message, "statement": excerpt})

    def needs_lock_timeout(self, stmt):
        if self.pg and not self.lock_timeout_set and not self.lock_timeout_reported:
            self.lock_timeout_reported = True
            self.add(stmt, "missing-lock-timeout", "warning",
                     "this statement waits for a strong lock with no lock_timeout; while it "
                     "waits, every query on the table queues behind it. Start the migration "
                     "with SET lock_timeout = '5s' (and retry on timeout)")

    def lint(self, stmt):
        u = stmt.upper
        if re.match(r"(BEGIN|START TRANSACTION)\b", u) and not u.startswith("BEGIN ATOMIC"):
            self.in_transaction = True
            return
        if re.match(r"(COMMIT|END|ROLLBACK|ABORT)\b", u):
            self.in_transaction = self.assume_transaction
            return
        if re.match(r"SET (LOCAL |SESSION )?LOCK_TIMEOUT\b", u):
            self.lock_timeout_set = True
            return

        match = re.match(r"CREATE (?:(?:GLOBAL |LOCAL )?(?:TEMP|TEMPORARY) |UNLOGGED )?TABLE "
                         r"(?:IF NOT EXISTS )?(" + IDENT + ")", stmt.norm, re.I)
        if match:
            self.created_tables.add(table_key(match.group(1)))
            return

        if re.match(r"CREATE (UNIQUE )?INDEX\b", u):
            return self.create_index(stmt)
        if re.match(r"REINDEX\b", u):
            if "CONCURRENTLY" in u:
                self.concurrently(stmt)
            else:
                self.add(stmt, "table-rewrite", "warning",
                         "REINDEX without CONCURRENTLY blocks writes to the table for the "
                         "whole rebuild")
            return
        if re.match(r"DROP INDEX\b", u):
            if "CONCURRENTLY" in u:
                self.concurrently(stmt)
            elif self.pg:
                self.needs_lock_timeout(stmt)
                self.add(stmt, "drop-index-not-concurrent", "warning",
                         "DROP INDEX takes an ACCESS EXCLUSIVE lock on the table; use "
                         "DROP INDEX CONCURRENTLY (outside a transaction)")
            return
        match = re.match(r"DROP TABLE (?:IF EXISTS )?(.*?)(?: CASCADE| RESTRICT)?$", stmt.norm, re.I)
        if match:
            names = [table_key(t) for t in split_top_level(match.group(1))]
            if not all(name in self.created_tables for name in names):
                self.needs_lock_timeout(stmt)
                self.add(stmt, "drop-table", "error",
                         "DROP TABLE destroys data and cannot be reverted by a down migration; "
                         "stop all reads/writes in code first, take a backup, drop in a later "
                         "release")
            return
        match = re.match(r"DROP (SCHEMA|TYPE|VIEW|MATERIALIZED VIEW|SEQUENCE|FUNCTION|"
                         r"PROCEDURE|TRIGGER|EXTENSION|DATABASE|DOMAIN)\b", u)
        if match:
            self.add(stmt, "drop-object", "warning",
                     "DROP %s: make sure nothing still uses it (code, views, triggers, "
                     "defaults); with CASCADE, list what else is dropped" % match.group(1))
            return
        if re.match(r"TRUNCATE\b", u):
            self.needs_lock_timeout(stmt)
            self.add(stmt, "truncate", "error",
                     "TRUNCATE deletes every row under an ACCESS EXCLUSIVE lock and is "
                     "irreversible")
            return
        if re.match(r"LOCK\b", u):
            self.add(stmt, "lock-table", "warning",
                     "explicit LOCK TABLE: check the lock mode and keep the transaction short")
            return
        if re.match(r"(VACUUM FULL|CLUSTER)\b", u):
            self.add(stmt, "table-rewrite", "warning",
                     "%s rewrites the table under an ACCESS EXCLUSIVE lock; consider "
                     "pg_repack or run it in a maintenance window"
                     % ("VACUUM FULL" if u.startswith("VACUUM") else "CLUSTER"))
            return
        if re.match(r"ALTER TYPE\b", u):
            return self.alter_type(stmt)
        if re.match(r"PRAGMA FOREIGN_KEYS\b", u) and self.in_transaction:
            self.add(stmt, "sqlite-pragma-in-transaction", "warning",
                     "PRAGMA foreign_keys is a no-op inside a transaction; set it before "
                     "BEGIN (many migration tools open the transaction for you)")
            return
        match = re.match(r"ALTER TABLE (?:IF EXISTS )?(?:ONLY )?(" + IDENT + r") (.*)$",
                         stmt.norm, re.I | re.S)
        if match:
            return self.alter_table(stmt, table_key(match.group(1)), match.group(2))
        if re.match(r"(WITH\b.*\b)?(UPDATE|DELETE)\b", u):
            return self.backfill(stmt)
        if re.match(r"INSERT INTO\b.*\bSELECT\b", u):
            self.add(stmt, "backfill", "warning",
                     "INSERT ... SELECT copies data inside the migration; on a large table "
                     "run it as a batched job outside the schema migration")

    def concurrently(self, stmt):
        if self.dialect == "sqlite":
            self.add(stmt, "sqlite-unsupported", "error",
                     "SQLite has no CONCURRENTLY; this is a syntax error")
        elif self.in_transaction:
            self.add(stmt, "concurrently-in-transaction", "error",
                     "CONCURRENTLY cannot run inside a transaction block; put it in its own "
                     "migration with the tool's transaction disabled")

    def create_index(self, stmt):
        u = stmt.upper
        match = re.search(r"\bON (?:ONLY )?(" + IDENT + ")", stmt.norm, re.I)
        table = table_key(match.group(1)) if match else ""
        if "CONCURRENTLY" in u:
            self.concurrently(stmt)
            return
        if self.pg and table not in self.created_tables:
            self.needs_lock_timeout(stmt)
            self.add(stmt, "create-index-not-concurrent", "warning",
                     "CREATE INDEX without CONCURRENTLY blocks writes to %s for the whole build; "
                     "use CREATE INDEX CONCURRENTLY outside a transaction" % (table or "the table"))

    def alter_type(self, stmt):
        u = stmt.upper
        if not self.pg:
            return
        if " ADD VALUE" in u:
            message = ("ALTER TYPE ... ADD VALUE: the new enum value cannot be used in the same "
                       "transaction (and before PostgreSQL 12 the statement cannot run in a "
                       "transaction at all); enum values can never be dropped, so this is "
                       "not reversible")
            if self.in_transaction:
                message += "; it is inside a transaction here"
            self.add(stmt, "alter-type", "warning", message)
        elif " RENAME VALUE" in u or " RENAME TO" in u:
            self.add(stmt, "alter-type", "warning",
                     "renaming a type or enum value breaks code and queries that use the old "
                     "name; deploy code that accepts both first")
        else:
            self.add(stmt, "alter-type", "warning",
                     "ALTER TYPE may lock or rewrite every table that uses the type; check "
                     "which columns depend on it")

    def alter_table(self, stmt, table, actions_text):
        new_table = table in self.created_tables
        for action in split_top_level(actions_text):
            a = action.upper()
            if self.dialect == "sqlite":
                self.sqlite_alter(stmt, a)
            if re.match(r"RENAME\b", a):
                self.add(stmt, "rename", "warning",
                         "renaming breaks the code still running during the deploy; add the new "
                         "name, dual-write, switch reads, then drop the old one in a later release")
                continue
            if re.match(r"DROP (COLUMN )?(?!CONSTRAINT\b)", a) and not new_table:
                if self.pg:
                    self.needs_lock_timeout(stmt)
                self.add(stmt, "drop-column", "warning",
                         "dropping a column loses its data and breaks code that still selects "
                         "it (including SELECT * and ORMs with cached column lists); remove all "
                         "uses in a previous release first")
                continue
            if new_table:
                continue
            if self.pg:
                self.needs_lock_timeout(stmt)
            if re.match(r"ADD (CONSTRAINT \S+ )?(PRIMARY KEY|UNIQUE|FOREIGN KEY|CHECK|EXCLUDE)\b", a):
                self.track_not_null_check(table, a)
                self.add_constraint(stmt, a)
            elif re.match(r"ADD\b", a):
                self.add_column(stmt, a)
            elif re.match(r"VALIDATE CONSTRAINT\b", a):
                name = table_key(a.split()[2]) if len(a.split()) > 2 else ""
                column = self.pending_checks.pop((table, name), None)
                if column:
                    self.not_null_checked.add((table, column))
            elif re.match(r"ALTER (COLUMN )?(?!CONSTRAINT\b)\S+ ", a):
                self.alter_column(stmt, table, a)
            elif re.match(r"SET (TABLESPACE|LOGGED|UNLOGGED|WITHOUT OIDS)\b", a) and self.pg:
                self.add(stmt, "table-rewrite", "warning",
                         "%s rewrites the whole table under an ACCESS EXCLUSIVE lock" % action)

    def track_not_null_check(self, table, a):
        match = re.match(r"ADD (?:CONSTRAINT (\S+) )?CHECK \(\s*(\S+) IS NOT NULL\s*\)", a)
        if not match:
            return
        column = table_key(match.group(2))
        if "NOT VALID" in a:
            self.pending_checks[(table, table_key(match.group(1) or ""))] = column
        else:
            self.not_null_checked.add((table, column))

    def add_column(self, stmt, a):
        definition = re.sub(r"^ADD (COLUMN )?(IF NOT EXISTS )?", "", a)
        has_default = re.search(r"\bDEFAULT\b", definition)
        generated = re.search(r"\bGENERATED\b", definition)
        if not self.pg:
            return  # SQLite: checked in sqlite_alter
        if re.search(r"\bNOT NULL\b", definition) and not has_default and not generated:
            self.add(stmt, "add-column-not-null-no-default", "error",
                     "ADD COLUMN ... NOT NULL without DEFAULT fails on a non-empty table; add it "
                     "nullable, backfill in batches, then add the NOT NULL constraint")
        if has_default and VOLATILE_DEFAULT.search(definition):
            self.add(stmt, "add-column-rewrite", "warning",
                     "a volatile DEFAULT (random(), gen_random_uuid(), clock_timestamp(), ...) "
                     "rewrites the whole table under an ACCESS EXCLUSIVE lock; add the column "
                     "without it, backfill in batches, then SET DEFAULT")
        elif re.search(r"\b(SMALL|BIG)?SERIAL\b", definition) or generated:
            self.add(stmt, "add-column-rewrite", "warning",
                     "serial, identity and stored generated columns rewrite the whole table "
                     "under an ACCESS EXCLUSIVE lock")

    def add_constraint(self, stmt, a):
        if self.dialect == "sqlite":
            return  # reported as unsupported
        if re.search(r"\b(FOREIGN KEY|CHECK)\b", a) and "NOT VALID" not in a:
            self.add(stmt, "constraint-not-valid", "warning",
                     "adding a FOREIGN KEY/CHECK validates every row while holding a lock that "
                     "blocks writes; add it NOT VALID, then VALIDATE CONSTRAINT in a separate "
                     "statement")
        elif re.search(r"\b(PRIMARY KEY|UNIQUE|EXCLUDE)\b", a) and "USING INDEX" not in a:
            self.add(stmt, "add-unique-constraint", "warning",
                     "this builds an index while blocking writes; CREATE UNIQUE INDEX "
                     "CONCURRENTLY first, then ADD CONSTRAINT ... USING INDEX")

    def alter_column(self, stmt, table, a):
        if self.dialect == "sqlite":
            return  # reported as unsupported
        if re.search(r" (SET DATA )?TYPE ", a):
            self.add(stmt, "alter-column-type", "warning",
                     "changing a column type usually rewrites the table and its indexes under "
                     "an ACCESS EXCLUSIVE lock (only binary-compatible changes such as "
                     "varchar(n) -> text skip it); add a new column, backfill, swap instead")
        elif " SET NOT NULL" in a:
            column = table_key(re.sub(r"^ALTER (COLUMN )?", "", a).split()[0])
            if (table, column) in self.not_null_checked:
                return  # PostgreSQL 12+ uses the validated CHECK and skips the scan
            self.add(stmt, "set-not-null", "warning",
                     "SET NOT NULL scans the whole table under an ACCESS EXCLUSIVE lock; first "
                     "ADD CONSTRAINT ... CHECK (col IS NOT NULL) NOT VALID, VALIDATE it, then "
                     "SET NOT NULL (PostgreSQL 12+ skips the scan)")

    def sqlite_alter(self, stmt, a):
        if re.match(r"ALTER (COLUMN )?\S+ ", a) or re.match(r"(ADD|DROP) CONSTRAINT\b", a) \
                or re.match(r"ADD (PRIMARY KEY|UNIQUE|FOREIGN KEY|CHECK)\b", a):
            self.add(stmt, "sqlite-unsupported", "error",
                     "SQLite ALTER TABLE supports only RENAME, ADD COLUMN and DROP COLUMN; "
                     "rebuild the table (create new, copy, drop old, rename) instead")
        elif re.match(r"ADD\b", a):
            if re.search(r"\bNOT NULL\b", a) and not re.search(r"\bDEFAULT\b", a):
                self.add(stmt, "add-column-not-null-no-default", "error",
                         "SQLite refuses ADD COLUMN ... NOT NULL without a non-NULL DEFAULT, "
                         "even on an empty table")
            if re.search(r"\b(PRIMARY KEY|UNIQUE)\b", a):
                self.add(stmt, "sqlite-unsupported", "error",
                         "SQLite cannot ADD COLUMN with PRIMARY KEY or UNIQUE; add the column, "
                         "then CREATE UNIQUE INDEX")
            if SQLITE_NONCONST_DEFAULT.search(a):
                self.add(stmt, "sqlite-unsupported", "error",
                         "SQLite cannot ADD COLUMN with a non-constant default "
                         "(CURRENT_TIMESTAMP or an expression)")
            if re.search(r"\bGENERATED\b.*\bSTORED\b", a):
                self.add(stmt, "sqlite-unsupported", "error",
                         "SQLite can only add VIRTUAL generated columns, not STORED")
        elif re.match(r"DROP (COLUMN )?(?!CONSTRAINT\b)", a):
            self.add(stmt, "sqlite-unsupported", "warning",
                     "SQLite DROP COLUMN needs 3.35+ and fails if the column is indexed, part "
                     "of a key or constraint, or used by a view or trigger")

    def backfill(self, stmt):
        u = stmt.upper
        match = re.search(r"\b(?:UPDATE|DELETE FROM)\s+(?:ONLY\s+)?(" + IDENT + ")", stmt.norm, re.I)
        if match and table_key(match.group(1)) in self.created_tables:
            return
        verb = "DELETE" if re.search(r"\bDELETE\b", u) and not re.search(r"\bUPDATE\b", u) else "UPDATE"
        if not re.search(r"\bWHERE\b", u):
            self.add(stmt, "backfill", "error",
                     "%s without WHERE touches every row in one transaction (long row locks, "
                     "table bloat, replication lag); batch it by primary key range" % verb)
        else:
            self.add(stmt, "backfill", "warning",
                     "data change inside a schema migration: make sure it is bounded and "
                     "idempotent, or move it to a batched backfill job")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Heuristic linter for SQL migrations.")
    parser.add_argument("files", nargs="+", help=".sql files to check ('-' for stdin)")
    parser.add_argument("--dialect", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--assume-transaction", action="store_true",
                        help="the migration tool wraps each file in a transaction")
    parser.add_argument("--ignore", default="", help="comma-separated rule ids to skip")
    parser.add_argument("--json", action="store_true", help="print findings as JSON")
    args = parser.parse_args(argv)

    ignore = {r.strip() for r in args.ignore.split(",") if r.strip()}
    unknown = ignore - ALL_RULES
    if unknown:
        print("lint_migration: unknown rule(s): %s" % ", ".join(sorted(unknown)), file=sys.stderr)
        return 2

    report = []
    for path in args.files:
        try:
            if path == "-":
                sql = sys.stdin.read()
            else:
                with open(path, encoding="utf-8") as handle:
                    sql = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            print("lint_migration: cannot read %s: %s" % (path, exc), file=sys.stderr)
            return 2
        linter = Linter(args.dialect, args.assume_transaction, ignore)
        for stmt in split_statements(sql):
            linter.lint(stmt)
        for finding in sorted(linter.findings, key=lambda f: f["line"]):
            finding["file"] = path
            report.append(finding)

    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for f in report:
            print("%s:%d: %s [%s] %s" % (f["file"], f["line"], f["severity"], f["rule"],
                                         f["message"]))
            print("    %s" % f["statement"])
        errors = sum(1 for f in report if f["severity"] == "error")
        print("%d finding(s): %d error(s), %d warning(s)"
              % (len(report), errors, len(report) - errors), file=sys.stderr)
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main())
