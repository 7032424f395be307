#!/usr/bin/env python3
"""Generate the skills-ref conformance fixtures for skillbase-format.

What it does
------------
Every case is DEFINED below as Python data (a name, a one-line note, a dict of
files ``path relative to input/ -> bytes``, and the list of skill dirs to feed
to the reference).  For each case the script

1. writes the files under ``crates/skillbase-format/tests/cases/<case>/input/``;
2. runs the installed reference implementation (PyPI ``skills-ref==0.1.1``,
   Python API ``skills_ref``) with the current working directory set to the
   case folder and the skill dir passed as a relative path string such as
   ``input/my-skill``:
   ``validate``, ``read_properties``, ``to_prompt``,
   ``skills_ref.parser.find_skill_md`` and ``skills_ref.parser.parse_frontmatter``;
3. writes ``expected.json`` next to ``input/`` (and ``cli.json`` for the few
   cases that also record the ``agentskills`` console command);
4. writes ``README.md`` in the cases folder (format + case index).

The cases folder is WIPED and regenerated on every run; the output is
deterministic for a given Python / unicodedata / strictyaml / click version
(recorded in the generated README).

How to run
----------
    python3 -m venv /tmp/skills-ref-venv
    /tmp/skills-ref-venv/bin/pip install skills-ref==0.1.1
    /tmp/skills-ref-venv/bin/python tools/reference/gen_cases.py

(or ``python3 tools/reference/gen_cases.py`` with any interpreter that has
``skills-ref==0.1.1`` installed; run it from anywhere, paths are derived from
this file's location).  Python >= 3.11 is required by skills-ref.  The
expected outputs were produced with Python 3.11 (Unicode 14.0 NFKC data).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field
from importlib.metadata import version as pkg_version
from pathlib import Path

try:
    import skills_ref
    from skills_ref import read_properties, to_prompt, validate
    from skills_ref.errors import ParseError, ValidationError
    from skills_ref.parser import find_skill_md, parse_frontmatter
except ImportError:  # pragma: no cover
    sys.exit("skills_ref is not importable: run `pip install skills-ref==0.1.1` "
             "(e.g. in /tmp/skills-ref-venv) and use that interpreter")

REPO_ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = REPO_ROOT / "crates" / "skillbase-format" / "tests" / "cases"
YAML_PREFIX = "Invalid YAML in frontmatter:"

# --------------------------------------------------------------------------
# Case model
# --------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    note: str
    files: dict[str, bytes]  # path relative to input/ -> exact bytes
    skill_dirs: list[str]  # relative to input/, in to_prompt order
    cli: list[list[str]] = field(default_factory=list)  # argv tails for `agentskills`


CASES: list[Case] = []


def add(name, note, files, skill_dirs=None, cli=None):
    if skill_dirs is None:
        first = next(iter(files))
        skill_dirs = [first.split("/", 1)[0]]
    assert all(isinstance(v, bytes) for v in files.values()), name
    assert name not in {c.name for c in CASES}, name
    CASES.append(Case(name, note, files, skill_dirs, cli or []))


def md(front: str, body: str = "Body\n") -> bytes:
    """A SKILL.md made of `---\\n{front}---\\n{body}` (front must end with \\n)."""
    return f"---\n{front}---\n{body}".encode("utf-8")


def sk(front: str, body: str = "Body\n", d: str = "my-skill", fname: str = "SKILL.md"):
    return {f"{d}/{fname}": md(front, body)}


def basic(name="my-skill", desc="A test skill", extra="", d=None, body="Body\n"):
    d = name if d is None else d
    return sk(f"name: {name}\ndescription: {desc}\n{extra}", body, d)


# The upstream tests (agentskills/agentskills skills-ref/tests, 40) are not generated here: they
# are public data under ../shared/benchmarks/agentskills-upstream, read from there by
# crates/skillbase-format/tests/upstream_cases.rs and never copied into the repository.

# --------------------------------------------------------------------------
# Observed edge cases (exact reference output recorded)
# --------------------------------------------------------------------------

O = "observed__"

# boundaries
add(O + "name_64_chars", "64 code points: valid", basic("a" * 64))
add(O + "name_65_chars", "65 code points: exceeds", basic("a" * 65))
add(O + "description_1024_chars", "1024: valid", basic(desc="d" * 1024))
add(O + "description_1025_chars", "1025: exceeds", basic(desc="d" * 1025))
add(O + "compatibility_500_chars", "500: valid", basic(extra="compatibility: " + "c" * 500 + "\n"))
add(O + "compatibility_501_chars", "501: exceeds", basic(extra="compatibility: " + "c" * 501 + "\n"))
add(O + "compatibility_empty", "`compatibility:` with no value is '' and passes; read_properties keeps ''",
    basic(extra="compatibility:\n"))
add(O + "compatibility_empty_quoted", "`compatibility: \"\"` passes", basic(extra='compatibility: ""\n'))
add(O + "compatibility_list", "block list: Field 'compatibility' must be a string",
    basic(extra="compatibility:\n  - linux\n  - macos\n"))

# name forms
add(O + "name_digits_only", "name: 123 is the string '123': valid", basic("123"))
add(O + "name_true", "name: true is the string 'true': valid", basic("true"))
add(O + "name_float_like", "name: 1.0 is '1.0': invalid characters ('.')", basic("1.0"))
add(O + "name_fullwidth_nfkc", "fullwidth name NFKC-equal to dir: valid; read_properties/to_prompt keep fullwidth",
    basic("\uff4d\uff59\uff0d\uff53\uff4b\uff49\uff4c\uff4c", d="my-skill"))
add(O + "name_ligature_nfkc", "U+FB01 ligature NFKC'd to 'fi': valid", basic("\ufb01le-tool", d="file-tool"))
add(O + "name_trailing_hyphen", "my-skill-", basic("my-skill-"))
add(O + "name_with_space", "'my skill' (dir too): invalid characters", basic("my skill"))
add(O + "name_with_dot", "my.skill: invalid characters", basic("my.skill"))
add(O + "name_hindi_combining_marks", "हिंदी: Mn/Mc marks are not isalnum(): rejected", basic("हिंदी"))
add(O + "name_arabic_indic_digits", "skill-١٢٣: Nd digits accepted", basic("skill-\u0661\u0662\u0663"))
add(O + "name_empty_quoted", "name: \"\"", basic('""', d="my-skill"))
add(O + "name_no_value", "`name:` with no value is ''", sk("name:\ndescription: A test skill\n"))
add(O + "name_whitespace_only", "name: \"   \"", basic('"   "', d="my-skill"))
add(O + "name_quoted_whitespace", "name: \"  my-skill  \": stripped, valid", basic('"  my-skill  "', d="my-skill"))
add(O + "name_list", "name is a block list: must be a non-empty string",
    sk("name:\n  - my-skill\ndescription: A test skill\n"))
add(O + "name_uppercase_dir_lowercase", "name My-Skill, dir my-skill: lowercase + mismatch",
    basic("My-Skill", d="my-skill"))
add(O + "dir_nfd_name_nfc", "dir cafe+U+0301 (NFD), name café (NFC): valid", basic("caf\u00e9", d="cafe\u0301"))
add(O + "dir_mismatch_uses_raw_dir_name", "mismatch message shows raw (NFD) dir basename",
    basic("cafes", d="cafe\u0301"))

# several errors at once
add(O + "multiple_errors_ordering", "all name checks + unknown fields + description + compatibility",
    sk("zeta: 1\nname: -A" + "a" * 62 + "--b_\nalpha: 2\ndescription: " + "x" * 1025
       + "\ncompatibility: " + "y" * 501 + "\n"),
    cli=[["validate", "input/my-skill"]])
add(O + "missing_name_and_description", "both missing",
    sk("license: MIT\n"))
add(O + "unknown_fields_sorted", "unknown fields are sorted (ASCII: 'Beta' < '_x' < 'alpha')",
    basic(extra="zeta: z\nBeta: b\nalpha: a\n_x: x\nversion: 1.0\n"))

# description
add(O + "description_whitespace_only", "description: \"   \"", basic(desc='"   "'))
add(O + "description_empty", "`description:` with no value", sk("name: my-skill\ndescription:\n"))
add(O + "description_unstripped_length", "quoted ' ' + 1023 x + ' ' = 1025 unstripped: exceeds; read_properties strips",
    basic(desc='" ' + "x" * 1023 + ' "'))
add(O + "description_codepoints_multibyte_1024", "1024 x 'é' (2048 bytes): valid", basic(desc="\u00e9" * 1024))
add(O + "description_codepoints_astral_1025", "1025 x U+1F600 (4 bytes, 2 UTF-16 units): exceeds (1025 chars)",
    basic(desc="\U0001F600" * 1025))
add(O + "description_colon_space_yaml_error", "unquoted ': ' inside a plain scalar",
    basic(desc="Use this: when needed"))
add(O + "description_folded_block", "`>-` folded block",
    basic(desc=">-\n  Line one\n  line two.\n\n  Second paragraph."))
add(O + "description_literal_block", "`|` literal block keeps newlines (and a trailing one; stripped by read_properties)",
    basic(desc="|\n  Line one\n  Line two"))
add(O + "description_multiline_plain", "plain scalar continued on an indented line",
    basic(desc="First line\n  second line"))
add(O + "description_hash_comment", "' #' starts a comment: 'license: C# only' kept, 'Tag #1' truncated",
    sk("name: my-skill\ndescription: Tag #1 issues\nlicense: C# only\n"))
add(O + "description_double_quoted_escapes", "double-quoted escapes are decoded",
    basic(desc='"Line one\\nLine two \\u00e9 \\"q\\" \\t end"'))
add(O + "description_single_quoted", "single-quoted with '' escape", basic(desc="'It''s fine: really'"))
add(O + "description_mapping", "description is a mapping: must be a non-empty string",
    sk("name: my-skill\ndescription:\n  text: hello\n"))

# YAML forms
add(O + "yaml_flow_list", "flow sequence is an error", basic(extra="allowed-tools: [Read, Write]\n"))
add(O + "yaml_flow_mapping", "flow mapping is an error", basic(extra="metadata: {author: x}\n"))
add(O + "yaml_duplicate_key", "duplicate key is an error", sk("name: my-skill\nname: other\ndescription: A test skill\n"))
add(O + "yaml_tab_indent", "tab indentation is an error", basic(extra="metadata:\n\tauthor: x\n"))
add(O + "yaml_tab_in_value", "a tab INSIDE a plain value is also an error", basic(desc="a\tb"))
add(O + "yaml_empty_frontmatter", "`---\\n---`: must be a YAML mapping", {"my-skill/SKILL.md": b"---\n---\nBody\n"})
add(O + "yaml_whitespace_frontmatter", "only blank lines between the markers", {"my-skill/SKILL.md": b"---\n  \n\n---\nBody\n"})
add(O + "yaml_utf8_bom", "UTF-8 BOM before ---: must start with YAML frontmatter",
    {"my-skill/SKILL.md": b"\xef\xbb\xbf" + md("name: my-skill\ndescription: A test skill\n")})
add(O + "yaml_crlf", "CRLF line endings: valid, no \\r in values",
    {"my-skill/SKILL.md": b"---\r\nname: my-skill\r\ndescription: A test skill\r\nmetadata:\r\n  author: Me\r\n---\r\n# Title\r\n\r\nBody\r\n"})
add(O + "triple_dash_inside_value", "'---' inside description splits there: description 'Compare a ', rest leaks into body",
    basic(desc="Compare a --- b", body="Real body\n"))
add(O + "triple_dash_inside_name", "'my---skill' truncates the frontmatter to 'name: my'",
    sk("name: my---skill\ndescription: A test skill\n", d="my---skill"))
add(O + "four_dash_opening", "'----' passes startswith('---') then fails as YAML",
    {"my-skill/SKILL.md": b"----\nname: my-skill\ndescription: A test skill\n---\nBody\n"})
add(O + "yaml_comments", "comments everywhere: valid",
    sk("# leading comment\nname: my-skill  # trailing comment\n# middle\ndescription: A test skill\n# end\n"))
add(O + "yaml_anchor_alias", "anchors/aliases are disallowed by strictyaml",
    sk("name: &n my-skill\ndescription: *n\n"))
add(O + "yaml_null_literals", "~ and null are strings", basic(extra="license: ~\ncompatibility: null\n"))
add(O + "yaml_nested_block_lists", "allowed-tools list with a nested list and a mapping: untouched, validate passes",
    basic(extra="allowed-tools:\n  - Read\n  - - Bash\n    - git\n  - tool: Write\n"))
add(O + "frontmatter_leading_newline", "blank line before ---", {"my-skill/SKILL.md": b"\n" + md("name: my-skill\ndescription: A test skill\n")})
add(O + "empty_file", "empty SKILL.md", {"my-skill/SKILL.md": b""})
add(O + "only_dashes", "SKILL.md is just '---'", {"my-skill/SKILL.md": b"---"})
add(O + "closing_without_body", "closing --- at EOF, no newline: body ''",
    {"my-skill/SKILL.md": b"---\nname: my-skill\ndescription: A test skill\n---"})
add(O + "body_with_horizontal_rule", "--- in the body after the closing marker stays in the body",
    basic(body="# Title\n\n---\n\nMore text\n"))

# files
add(O + "lowercase_skill_md", "only skill.md: valid, location ends in skill.md",
    sk("name: my-skill\ndescription: A test skill\n", fname="skill.md"))
add(O + "both_skill_md_variants", "SKILL.md (valid) wins over skill.md (invalid)",
    {**sk("name: my-skill\ndescription: From uppercase\n"),
     **sk("name: Other\ndescription: From lowercase\n", fname="skill.md")})
add(O + "skill_md_wrong_case_variants", "Skill.md and SKILL.MD are not found (case-sensitive FS only)",
    {"my-skill/Skill.md": md("name: my-skill\ndescription: A\n"), "my-skill/SKILL.MD": md("name: my-skill\ndescription: A\n")})
add(O + "skill_md_is_directory", "SKILL.md is a directory: IsADirectoryError escapes",
    {"my-skill/SKILL.md/.gitkeep": b""})

# untyped fields
add(O + "metadata_non_string_values", "metadata values that are lists/maps become Python repr strings",
    basic(extra="metadata:\n  tags:\n    - a\n    - b\n  nested:\n    k: v\n  quote: it's\n"))
add(O + "metadata_scalar", "metadata is a plain string: passes, kept as-is", basic(extra="metadata: just text\n"))
add(O + "metadata_empty", "`metadata:` is '': dropped by to_dict", basic(extra="metadata:\n"))
add(O + "metadata_numbers", "version: 1.0, 42, true, null, empty, numeric key: all strings",
    basic(extra="metadata:\n  version: 1.0\n  count: 42\n  enabled: true\n  nothing: null\n  empty:\n  1: one\n"))
add(O + "allowed_tools_list", "allowed-tools as a block list: passes, kept as a list", basic(extra="allowed-tools:\n  - Read\n  - Bash(git:*)\n"))
add(O + "license_list", "license as a block list: passes, kept as a list", basic(extra="license:\n  - MIT\n  - Apache-2.0\n"))
add(O + "license_mapping", "license as a mapping: passes", basic(extra="license:\n  spdx: MIT\n"))

# encoding
add(O + "non_utf8_latin1", "Latin-1 byte in description: UnicodeDecodeError",
    {"my-skill/SKILL.md": b"---\nname: my-skill\ndescription: caf\xe9\n---\nBody\n"})
add(O + "non_utf8_in_body", "invalid UTF-8 only in the body still raises",
    {"my-skill/SKILL.md": b"---\nname: my-skill\ndescription: A test skill\n---\nBody \xff\xfe\n"})

# to_prompt
add(O + "prompt_escape_quotes", "\" -> &quot;, ' -> &#x27;", basic(desc="Say \"hi\" and 'bye'"))
add(O + "prompt_escape_all", "& < > \" ' and an existing entity", basic(desc="Use \"x\" & 'y' <z> &amp; done"))
add(O + "prompt_escape_name", "name with & and <> (invalid) is escaped in the prompt",
    basic('"R&D <tool>"', d="my-skill"))
add(O + "prompt_invalid_name_renders", "Bad_Name renders (no validation in to_prompt)", basic("Bad_Name"))
add(O + "prompt_missing_description_fails", "second dir lacks description: whole to_prompt fails",
    {**sk("name: skill-a\ndescription: First skill\n", d="skill-a"), **sk("name: skill-b\n", d="skill-b")},
    skill_dirs=["skill-a", "skill-b"])
add(O + "prompt_multiple_skills_order", "three skills, input order kept (not sorted)",
    {**sk("name: zeta-skill\ndescription: Zeta\n", d="zeta-skill"),
     **sk("name: alpha-skill\ndescription: Alpha\n", d="alpha-skill"),
     **sk("name: mid-skill\ndescription: Mid\n", d="mid-skill", fname="skill.md")},
    skill_dirs=["zeta-skill", "alpha-skill", "mid-skill"],
    cli=[["to-prompt", "input/zeta-skill", "input/alpha-skill", "input/mid-skill"]])
add(O + "prompt_same_dir_twice", "same dir twice renders twice", basic(), skill_dirs=["my-skill", "my-skill"])
add(O + "prompt_multiline_description", "literal block description rendered verbatim (stripped)",
    basic(desc="|\n  Line one & more\n\n  Line <three>\n"))

# read_properties
add(O + "read_properties_key_order", "frontmatter in reverse order; to_dict order is fixed",
    sk("metadata:\n  b: 2\n  a: 1\nallowed-tools: Read\ncompatibility: Any\nlicense: MIT\ndescription: A test skill\nname: my-skill\n"))
add(O + "read_properties_no_validation", "uppercase name, wrong dir, unknown field, long description: read_properties still ok",
    sk("name: Bad_Name\ndescription: " + "x" * 1100 + "\nunknown: field\ncompatibility: " + "c" * 600 + "\n", d="somewhere"))

# CLI
add(O + "cli_skill_md_file_path", "API on a SKILL.md path: Not a directory; CLI maps it to the parent",
    sk("name: my-skill\ndescription: A test skill\n"), skill_dirs=["my-skill/SKILL.md"],
    cli=[["validate", "input/my-skill/SKILL.md"], ["read-properties", "input/my-skill/SKILL.md"],
         ["to-prompt", "input/my-skill/SKILL.md"]])
add(O + "cli_lowercase_skill_md_file_path", "CLI maps a skill.md path to the parent too",
    sk("name: my-skill\ndescription: A test skill\n", fname="skill.md"), skill_dirs=["my-skill/skill.md"],
    cli=[["validate", "input/my-skill/skill.md"]])

# --------------------------------------------------------------------------
# Running the reference
# --------------------------------------------------------------------------


def _err(e: BaseException, subst):
    if isinstance(e, (ParseError, ValidationError)):
        msg = subst(str(e))
        obj = {"type": type(e).__name__, "message": msg}
        if msg.startswith(YAML_PREFIX):
            obj["yaml_error"] = True
        return {"error": obj}
    return {"exception": type(e).__name__}


def run_case(case: Case, case_dir: Path) -> dict:
    real = os.path.realpath(case_dir)
    rel = ["input/" + d for d in case.skill_dirs]
    out: dict = {"skill_dirs": rel}
    old = os.getcwd()
    os.chdir(case_dir)
    try:
        if rel:
            d0 = rel[0]

            def s_rel(s: str) -> str:
                return s.replace(d0, "{SKILL_DIR}")

            try:
                errors = [s_rel(e) for e in validate(Path(d0))]
                v = {"errors": errors}
                if len(errors) == 1 and errors[0].startswith(YAML_PREFIX):
                    v["yaml_error"] = True
                out["validate"] = v
            except Exception as e:  # noqa: BLE001
                out["validate"] = {"exception": type(e).__name__}

            try:
                out["read_properties"] = {"ok": read_properties(Path(d0)).to_dict()}
            except Exception as e:  # noqa: BLE001
                out["read_properties"] = _err(e, s_rel)

        def s_abs(s: str) -> str:
            return s.replace(real, "{CASE_DIR}")

        try:
            out["to_prompt"] = {"ok": s_abs(to_prompt([Path(d) for d in rel]))}
        except Exception as e:  # noqa: BLE001
            out["to_prompt"] = _err(e, s_abs)

        if rel:
            found = find_skill_md(Path(rel[0]))
            text = None
            if found is not None:
                try:
                    text = found.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    text = None
            if text is not None:
                try:
                    meta, body = parse_frontmatter(text)
                    out["parse"] = {"ok": {"metadata": meta, "body": body}}
                except Exception as e:  # noqa: BLE001
                    out["parse"] = _err(e, lambda s: s)
            out["found"] = None if found is None else found.name
    finally:
        os.chdir(old)
    return out


def agentskills_exe() -> str:
    cand = Path(sys.executable).parent / "agentskills"
    if cand.exists():
        return str(cand)
    found = shutil.which("agentskills")
    if not found:
        sys.exit("the `agentskills` console script (skills-ref) was not found")
    return found


def run_cli(case: Case, case_dir: Path) -> list[dict]:
    real = os.path.realpath(case_dir)
    env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8", PYTHONIOENCODING="utf-8", COLUMNS="80")
    res = []
    for args in case.cli:
        p = subprocess.run([agentskills_exe(), *args], cwd=case_dir, env=env, capture_output=True)
        res.append({
            "args": args,
            "exit_code": p.returncode,
            "stdout": p.stdout.decode("utf-8").replace(real, "{CASE_DIR}"),
            "stderr": p.stderr.decode("utf-8").replace(real, "{CASE_DIR}"),
        })
    return res


def dump(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------
# README
# --------------------------------------------------------------------------

README_HEAD = """\
# skills-ref conformance cases

Generated by `tools/reference/gen_cases.py`. **Do not edit by hand**: the whole
folder (this README included) is wiped and regenerated.

Regenerate:

```sh
python3 -m venv /tmp/skills-ref-venv
/tmp/skills-ref-venv/bin/pip install skills-ref==0.1.1
/tmp/skills-ref-venv/bin/python tools/reference/gen_cases.py   # from the repo root (any cwd works)
```

(`python3 tools/reference/gen_cases.py` works with any interpreter that has
`skills-ref==0.1.1` installed.)

Generated with: {env}.
NFKC results depend on Python's Unicode data version; regenerate with the same
Python minor version to get identical files.

## Layout

```
<case-name>/
  input/...        the skill dir(s), exact bytes (non-ASCII dir names are UTF-8; NFC vs NFD preserved)
  expected.json    what the reference returned
  cli.json         (only some cases) what the `agentskills` console command printed
```

Case names: `observed__<topic>` (edge cases recorded from the reference). The 40 upstream
pytest cases of `agentskills/agentskills` `skills-ref/tests` are public data read from
`../shared/benchmarks/agentskills-upstream` by `tests/upstream_cases.rs`, never copied here.

## expected.json

```jsonc
{{
  "skill_dirs": ["input/my-skill"],            // relative to the case folder, in order
  "validate": {{"errors": ["..."]}},             // validate(skill_dirs[0]); or {{"exception": "UnicodeDecodeError"}}
  "read_properties": {{"ok": {{...}}}},            // to_dict() of skill_dirs[0], keys in emitted order
                                               // or {{"error": {{"type": "ParseError"|"ValidationError", "message": "..."}}}}
                                               // or {{"exception": "UnicodeDecodeError"}}
  "to_prompt": {{"ok": "<available_skills>..."}}, // over ALL skill_dirs in order; or {{"error": ...}} / {{"exception": ...}}
  "parse": {{"ok": {{"metadata": {{...}}, "body": "..."}}}}, // parse_frontmatter(text of the found SKILL.md); or {{"error": ...}}
  "found": "SKILL.md" | "skill.md" | null       // basename of find_skill_md(skill_dirs[0])
}}
```

* The reference is run with cwd = the case folder, each skill dir passed as the
  relative string from `skill_dirs` (e.g. `input/my-skill`).
* `validate`, `read_properties`, `parse` and `found` are for `skill_dirs[0]` only.
* `parse` is omitted when no SKILL.md/skill.md is found, or when it cannot be
  read as UTF-8 text (non-UTF-8 bytes, SKILL.md being a directory).
* `(upstream, in ../shared) test_prompt__test_empty_list` has `"skill_dirs": []` and only a
  `to_prompt` key (`to_prompt([])`).
* Exceptions that are not `SkillError`s (`UnicodeDecodeError`,
  `IsADirectoryError`) are recorded by class name only.
* JSON is UTF-8 (`ensure_ascii=False`), 2-space indent, object keys in the
  order the reference produced them (compare `read_properties.ok` and
  `parse.ok.metadata` order-sensitively if you care about key order).

### Placeholders

* `{{SKILL_DIR}}`: in `validate.errors` and `read_properties.error.message`,
  the exact relative path string `skill_dirs[0]` was replaced by `{{SKILL_DIR}}`
  (e.g. `Path does not exist: {{SKILL_DIR}}`, `SKILL.md not found in {{SKILL_DIR}}`).
  Substitute the path string you passed before comparing.
* `{{CASE_DIR}}`: `to_prompt` resolves each dir to an absolute path, so its
  `<location>` lines and its error messages contain the case folder's absolute
  resolved path; that prefix is replaced by `{{CASE_DIR}}`
  (`{{CASE_DIR}}/input/my-skill/SKILL.md`). Substitute the resolved case folder
  path (`std::fs::canonicalize`).

### YAML errors

The strictyaml error text (multi-line, `in "<unicode string>", line N, column M`)
is kept in full, but a runner should compare only the prefix
`Invalid YAML in frontmatter:`. Such error objects carry `"yaml_error": true`;
for `validate` the flag sits beside `errors` (the list then has exactly one
message starting with that prefix).

## cli.json (optional)

A list of `{{"args": [...], "exit_code": N, "stdout": "...", "stderr": "..."}}`
for `agentskills <args>` run with cwd = the case folder. `args` and outputs
contain the literal relative paths (no `{{SKILL_DIR}}`); only the absolute case
folder path is replaced by `{{CASE_DIR}}`. Click usage text comes from click
{click}. See also `tools/reference/CLI_OBSERVED.md`.

## Filesystem caveats

A `.gitattributes` (`* -text`) in this folder stops git from converting line
endings, so `observed__yaml_crlf` keeps its CRLF bytes on every platform.

The expectations were produced on a case-sensitive Linux filesystem.
`(upstream, in ../shared) test_parser__test_find_skill_md_prefers_uppercase`,
`observed__both_skill_md_variants` (two files differing only in case),
`observed__skill_md_wrong_case_variants` (`Skill.md`/`SKILL.MD` not found) and
the NFC/NFD dir-name cases (`(upstream, in ../shared) test_validator__test_nfkc_normalization`,
`observed__dir_nfd_name_nfc`, `observed__dir_mismatch_uses_raw_dir_name`) only
mean what they say on a case-sensitive, normalization-preserving filesystem.

## Cases ({n})

| case | note |
| --- | --- |
"""


def main() -> None:
    if skills_ref.__version__ != "0.1.1" and pkg_version("skills-ref") != "0.1.1":
        sys.exit(f"need skills-ref 0.1.1, found {pkg_version('skills-ref')}")
    if sys.getfilesystemencoding().lower() not in ("utf-8", "utf8"):
        sys.exit("the filesystem encoding must be UTF-8")
    assert CASES_DIR.parts[-4:] == ("crates", "skillbase-format", "tests", "cases")
    if CASES_DIR.exists():
        shutil.rmtree(CASES_DIR)
    CASES_DIR.mkdir(parents=True)

    for case in CASES:
        case_dir = CASES_DIR / case.name
        inp = case_dir / "input"
        inp.mkdir(parents=True)
        for rel_path, data in sorted(case.files.items()):
            p = inp / rel_path
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        expected = run_case(case, case_dir)
        (case_dir / "expected.json").write_text(dump(expected), encoding="utf-8")
        if case.cli:
            (case_dir / "cli.json").write_text(dump(run_cli(case, case_dir)), encoding="utf-8")

    env = (f"skills-ref {pkg_version('skills-ref')}, strictyaml {pkg_version('strictyaml')}, "
           f"click {pkg_version('click')}, Python {sys.version.split()[0]} "
           f"(unicodedata {unicodedata.unidata_version})")
    readme = README_HEAD.format(env=env, click=pkg_version("click"), n=len(CASES))
    for case in CASES:
        readme += f"| `{case.name}` | {case.note.replace('|', '/')} |\n"
    (CASES_DIR / "README.md").write_text(readme, encoding="utf-8")
    # keep every input byte-exact in git (CRLF case, non-UTF-8 files, no EOL conversion)
    (CASES_DIR / ".gitattributes").write_text("* -text\n", encoding="utf-8")
    print(f"wrote {len(CASES)} cases to {CASES_DIR}")


if __name__ == "__main__":
    main()
