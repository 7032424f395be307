#!/usr/bin/env python3
"""Sanity checks for the Skillbase routing evaluation set (stdlib only).

Run from anywhere: python3 eval/check.py
Exits non-zero if any problem is found.
"""
import json
import os
import re
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
SKILLS = os.path.join(HERE, "skills")
CASES = os.path.join(HERE, "cases.jsonl")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KINDS = {"direct", "paraphrase", "trigger", "lookalike", "other_language", "long", "no_skill"}
LANGS = {"en", "es", "fr", "pt", "de"}

problems = []


def problem(msg):
    problems.append(msg)


def unquote(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        return v[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if len(v) >= 2 and v[0] == "'" and v[-1] == "'":
        return v[1:-1].replace("''", "'")
    return v


def parse_frontmatter(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    marks = [i for i, l in enumerate(lines) if l.strip() == "---"]
    if len(marks) < 2 or marks[0] != 0:
        raise ValueError("no frontmatter between the first two --- lines")
    fm = lines[marks[0] + 1 : marks[1]]
    body = "\n".join(lines[marks[1] + 1 :]).strip()
    meta, key = {}, None
    for l in fm:
        if not l.strip():
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_-]*):(.*)$", l)
        if m:
            key, val = m.group(1), m.group(2).strip()
            if key in meta:
                raise ValueError("duplicate key " + key)
            meta[key] = unquote(val) if val else []
        elif re.match(r"^\s+- ", l) and key is not None and isinstance(meta[key], list):
            meta[key].append(unquote(l.strip()[2:]))
        else:
            raise ValueError("cannot parse frontmatter line: " + l)
    return meta, body


skills = {}
for entry in sorted(os.listdir(SKILLS)):
    path = os.path.join(SKILLS, entry, "SKILL.md")
    if not os.path.isfile(path):
        problem(f"{entry}: no SKILL.md")
        continue
    try:
        meta, body = parse_frontmatter(path)
    except ValueError as e:
        problem(f"{entry}: {e}")
        continue
    name = meta.get("name")
    if name != entry:
        problem(f"{entry}: name {name!r} differs from folder")
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 64:
        problem(f"{entry}: bad name {name!r}")
    desc = meta.get("description")
    if not isinstance(desc, str) or not desc:
        problem(f"{entry}: description missing")
    elif len(desc) > 1024:
        problem(f"{entry}: description longer than 1024 chars")
    elif not 60 <= len(desc) <= 300:
        problem(f"{entry}: description is {len(desc)} chars (aim 60-300)")
    trig = meta.get("triggers", [])
    if not isinstance(trig, list):
        problem(f"{entry}: triggers must be a list")
        trig = []
    for t in trig:
        if len(t) > 200:
            problem(f"{entry}: trigger longer than 200 chars: {t!r}")
        if len(t.split()) < 2:
            problem(f"{entry}: single-word trigger {t!r}")
    unknown = set(meta) - {"name", "description", "triggers"}
    if unknown:
        problem(f"{entry}: unexpected keys {sorted(unknown)}")
    nsteps = len([l for l in body.split("\n") if re.match(r"^\d+\. ", l)])
    if not 5 <= nsteps <= 15:
        problem(f"{entry}: body has {nsteps} steps (aim 5-15)")
    skills[entry] = {"description": desc, "triggers": [t.lower() for t in trig]}

cases = []
for n, line in enumerate(open(CASES, encoding="utf-8"), 1):
    if not line.strip():
        problem(f"cases.jsonl:{n}: blank line")
        continue
    try:
        c = json.loads(line)
    except json.JSONDecodeError as e:
        problem(f"cases.jsonl:{n}: invalid JSON ({e})")
        continue
    if set(c) != {"message", "expected", "kind", "lang"}:
        problem(f"cases.jsonl:{n}: keys are {sorted(c)}")
        continue
    if not isinstance(c["message"], str) or not c["message"].strip():
        problem(f"cases.jsonl:{n}: empty message")
    if c["kind"] not in KINDS:
        problem(f"cases.jsonl:{n}: unknown kind {c['kind']!r}")
    if c["lang"] not in LANGS:
        problem(f"cases.jsonl:{n}: unknown lang {c['lang']!r}")
    exp = c["expected"]
    if exp is None:
        if c["kind"] != "no_skill":
            problem(f"cases.jsonl:{n}: expected null outside no_skill")
    elif exp not in skills:
        problem(f"cases.jsonl:{n}: expected {exp!r} is not a skill")
    elif c["kind"] == "no_skill":
        problem(f"cases.jsonl:{n}: no_skill case expects {exp!r}")
    c["_line"] = n
    cases.append(c)

msg_lc = [(c, c["message"].lower()) for c in cases]
for c, m in msg_lc:
    n, exp, kind = c["_line"], c["expected"], c["kind"]
    if kind == "trigger" and exp in skills:
        if not any(t in m for t in skills[exp]["triggers"]):
            problem(f"cases.jsonl:{n}: trigger case contains none of {exp}'s triggers")
    if kind in ("no_skill", "paraphrase"):
        for other, s in skills.items():
            if other == exp:
                continue
            for t in s["triggers"]:
                if t in m:
                    problem(f"cases.jsonl:{n}: {kind} message contains trigger {t!r} of {other}")
    if kind == "long" and not 1500 <= len(c["message"]) <= 5000:
        problem(f"cases.jsonl:{n}: long message is {len(c['message'])} chars (1500-5000)")
    if kind == "other_language" and c["lang"] == "en":
        problem(f"cases.jsonl:{n}: other_language case with lang en")

seen = Counter()
for c in cases:
    seen[c["message"].strip().lower()] += 1
for m, k in seen.items():
    if k > 1:
        problem(f"duplicate message ({k}x): {m[:60]!r}")

per_skill = Counter(c["expected"] for c in cases if c["expected"])
for s in skills:
    if per_skill[s] < 3:
        problem(f"{s}: expected by only {per_skill[s]} case(s)")

print(f"skills: {len(skills)} ({sum(1 for s in skills.values() if s['triggers'])} with triggers)")
print(f"cases: {len(cases)}")
print("per kind:", dict(sorted(Counter(c["kind"] for c in cases).items())))
print("per lang:", dict(sorted(Counter(c["lang"] for c in cases).items())))
print("other_language per lang:", dict(sorted(Counter(c["lang"] for c in cases if c["kind"] == "other_language").items())))
counts = sorted(per_skill.values())
print(f"cases per skill: min {counts[0]}, median {counts[len(counts)//2]}, max {counts[-1]}")
if problems:
    print(f"\n{len(problems)} problem(s):")
    for p in problems:
        print("  " + p)
    sys.exit(1)
print("OK")
