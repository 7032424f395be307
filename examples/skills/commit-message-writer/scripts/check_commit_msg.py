#!/usr/bin/env python3
"""Validate a commit message file against Conventional Commits 1.0.0.

Usage:
    check_commit_msg.py [options] MESSAGE_FILE      (use "-" for stdin)

Works as a git commit-msg hook as is:
    ln -s ../../path/to/check_commit_msg.py .git/hooks/commit-msg

Exit codes:
    0  the message is valid (warnings may have been printed)
    1  the message is invalid (or has warnings and --strict was given)
    2  usage error, or the file cannot be read

Standard library only; Python 3.8+.
"""

import argparse
import re
import sys

DEFAULT_TYPES = (
    "feat", "fix", "perf", "refactor", "docs", "style",
    "test", "build", "ci", "chore", "revert",
)

# Headers that tools conventionally let through untouched.
EXEMPT_PREFIXES = ("Merge ", 'Revert "', "fixup! ", "squash! ", "amend! ")

SCISSORS = re.compile(r"^# -+ >8 -+$")
HEADER = re.compile(
    r"^(?P<type>[A-Za-z]+)"
    r"(?:\((?P<scope>[^()]*)\))?"
    r"(?P<bang>!)?"
    r"(?P<sep>:\s*)"
    r"(?P<subject>.*)$"
)
SCOPE_OK = re.compile(r"^[a-z0-9][a-z0-9._/-]*(,\s?[a-z0-9][a-z0-9._/-]*)*$")
FOOTER = re.compile(r"^(?P<token>BREAKING CHANGE|[A-Za-z][A-Za-z0-9-]*)(?P<sep>: | #)(?P<value>.*)$")
BREAKING_ANYCASE = re.compile(r"^breaking[ -]change\s*:", re.IGNORECASE)
BREAKING_EXACT = re.compile(r"^BREAKING[ -]CHANGE: \S")
URL_ONLY = re.compile(r"^\s*(\S+://\S+|\[\d+\]:?\s*\S+://\S+)\s*$")
# First words that are clearly not imperative ("added", "fixes", "updating").
NON_IMPERATIVE = re.compile(r"^(?:[a-z]+ed|[a-z]+ing|adds|fixes|updates|removes|changes|"
                            r"improves|makes|uses|moves|renames|bumps|allows)$")
IMPERATIVE_EXCEPTIONS = {"need", "embed", "feed", "speed", "seed", "shed", "bring",
                         "string", "ping", "ring", "sing", "wing", "spring", "bed"}


def clean(text, comment_char="#"):
    """Drop git comment lines and everything below the scissors line."""
    lines = []
    for line in text.splitlines():
        if SCISSORS.match(line):
            break
        if comment_char and line.startswith(comment_char):
            continue
        lines.append(line.rstrip())
    # Trim leading and trailing blank lines.
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def paragraphs(lines):
    """Split lines into paragraphs: list of (first_line_number, [lines])."""
    result, current, start = [], [], None
    for number, line in enumerate(lines, 1):
        if line.strip():
            if not current:
                start = number
            current.append(line)
        elif current:
            result.append((start, current))
            current = []
    if current:
        result.append((start, current))
    return result


def check(text, types, scopes, max_header, max_body, comment_char):
    """Return (errors, warnings) as lists of strings."""
    errors, warnings = [], []
    lines = clean(text, comment_char)
    if not lines:
        return ["message is empty"], warnings

    header = lines[0]
    if header.startswith(EXEMPT_PREFIXES):
        # Merge, git-revert and autosquash headers are left to git; nothing to check.
        return errors, warnings

    match = HEADER.match(header)
    if not match:
        errors.append(
            "line 1: header must look like 'type(scope)!: subject', got %r" % header)
        return errors, warnings

    ctype, scope, bang = match.group("type"), match.group("scope"), match.group("bang")
    sep, subject = match.group("sep"), match.group("subject")

    if ctype != ctype.lower():
        errors.append("line 1: type %r must be lowercase" % ctype)
    if ctype.lower() not in types:
        errors.append("line 1: unknown type %r (allowed: %s)" % (ctype, ", ".join(types)))
    if scope is not None:
        if not scope.strip():
            errors.append("line 1: empty scope '()'; drop the parentheses or name a scope")
        elif not SCOPE_OK.match(scope):
            errors.append("line 1: scope %r must be lowercase letters, digits, '.', '_', '/', '-'"
                          % scope)
        elif scopes and any(s.strip() not in scopes for s in scope.split(",")):
            errors.append("line 1: scope %r is not one of: %s" % (scope, ", ".join(scopes)))
    if sep != ": ":
        errors.append("line 1: type/scope must be followed by ': ' (colon and one space)")
    if not subject.strip():
        errors.append("line 1: subject is empty")
    else:
        if subject.endswith("."):
            errors.append("line 1: subject must not end with a period")
        first = subject.split()[0]
        if first[:1].isupper() and not first.isupper() and not any(c.isupper() for c in first[1:]):
            warnings.append("line 1: start the subject with a lowercase word (%r)" % first)
        lowered = first.lower()
        if NON_IMPERATIVE.match(lowered) and lowered not in IMPERATIVE_EXCEPTIONS:
            warnings.append("line 1: use the imperative mood ('add', not %r)" % first)
    if len(header) > max_header:
        errors.append("line 1: header is %d characters; keep it <= %d"
                      % (len(header), max_header))

    if len(lines) > 1 and lines[1].strip():
        errors.append("line 2: must be blank (separates the header from the body)")

    rest = paragraphs(lines[1:])
    # Shift numbering: paragraphs() counted from line 2.
    rest = [(start + 1, para) for start, para in rest]

    footer_block = None
    if rest and (FOOTER.match(rest[-1][1][0]) or BREAKING_ANYCASE.match(rest[-1][1][0])):
        footer_block = rest[-1]

    body_paragraphs = rest[:-1] if footer_block else rest
    for start, para in body_paragraphs:
        for offset, line in enumerate(para):
            number = start + offset
            if BREAKING_ANYCASE.match(line):
                errors.append("line %d: 'BREAKING CHANGE:' must be in the footer block "
                              "(last paragraph) to be recognized" % number)
            if len(line) > max_body and not URL_ONLY.match(line):
                warnings.append("line %d: %d characters; wrap the body at %d"
                                % (number, len(line), max_body))

    has_breaking_footer = False
    if footer_block:
        start, para = footer_block
        for offset, line in enumerate(para):
            number = start + offset
            if BREAKING_ANYCASE.match(line):
                if BREAKING_EXACT.match(line):
                    has_breaking_footer = True
                else:
                    errors.append("line %d: write the token exactly as 'BREAKING CHANGE: "
                                  "<description>' (uppercase, colon, space, text)" % number)
                continue
            footer = FOOTER.match(line)
            if footer is None:
                # A continuation line of the previous footer's value.
                if offset == 0:
                    errors.append("line %d: malformed footer %r" % (number, line))
                continue
            if not footer.group("value").strip():
                errors.append("line %d: footer %r has no value"
                              % (number, footer.group("token")))

    if bang and not has_breaking_footer:
        warnings.append("'!' marks a breaking change; add a 'BREAKING CHANGE: ' footer "
                        "saying what breaks and how to migrate")
    return errors, warnings


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Validate a commit message against Conventional Commits 1.0.0.")
    parser.add_argument("file", help="message file, or '-' for stdin")
    parser.add_argument("--types", help="comma-separated allowed types (default: %s)"
                        % ",".join(DEFAULT_TYPES))
    parser.add_argument("--scopes", help="comma-separated allowed scopes (default: any)")
    parser.add_argument("--max-header", type=int, default=72,
                        help="maximum header length (default: 72)")
    parser.add_argument("--max-body", type=int, default=100,
                        help="body line length that triggers a warning (default: 100)")
    parser.add_argument("--comment-char", default="#",
                        help="git core.commentChar; lines starting with it are ignored")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    parser.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    args = parser.parse_args(argv)

    try:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        print("check_commit_msg: cannot read %s: %s" % (args.file, exc), file=sys.stderr)
        return 2

    types = tuple(t.strip().lower() for t in args.types.split(",")) if args.types else DEFAULT_TYPES
    scopes = tuple(s.strip() for s in args.scopes.split(",")) if args.scopes else ()
    errors, warnings = check(text, types, scopes, args.max_header, args.max_body,
                             args.comment_char)

    for message in errors:
        print("error: " + message, file=sys.stderr)
    if not args.quiet:
        for message in warnings:
            print("warning: " + message, file=sys.stderr)

    failed = bool(errors) or (args.strict and bool(warnings))
    if not args.quiet:
        print("commit message: %s (%d error(s), %d warning(s))"
              % ("INVALID" if failed else "ok", len(errors), len(warnings)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
