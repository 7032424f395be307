"""Generate N synthetic, spec-valid Agent Skills folders (deterministic)."""
import random, sys, os, pathlib
out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/skills1k")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
rng = random.Random(42)
nouns = ["pdf","csv","invoice","release","incident","schema","api","report","chart","image","audio","log","contract","ticket","backup","sql","docker","terraform","k8s","email"]
verbs = ["processing","review","triage","migration","analysis","export","audit","cleanup","rollout","summary","validation","deploy"]
words = ("the agent should check inputs before running any command and prefer idempotent operations "
         "when editing files keep a backup and verify the result with the bundled validator script "
         "always report what changed including file paths and counts and stop on the first hard error").split()
def sentence(k):
    return " ".join(rng.choice(words) for _ in range(k)).capitalize() + "."
def body(name, target):
    parts = [f"# {name.replace('-', ' ').title()}\n", "## When to use this skill\n", sentence(18) + " " + sentence(14) + "\n"]
    step = 1
    while sum(len(p) for p in parts) < target:
        r = rng.random()
        if r < 0.35:
            parts.append(f"## Step {step}\n"); step += 1
            parts.append("\n".join(f"{i}. {sentence(rng.randint(8, 16))}" for i in range(1, rng.randint(3, 7))) + "\n")
        elif r < 0.55:
            parts.append("```bash\npython scripts/run.py --input data/input.json --out out/ --verbose\n```\n")
        elif r < 0.7:
            parts.append("## Gotchas\n" + "\n".join(f"- {sentence(rng.randint(10, 20))}" for _ in range(3)) + "\n")
        elif r < 0.8:
            parts.append("See [the reference guide](references/REFERENCE.md) for details, and use the template in `assets/template.md`.\n")
        else:
            parts.append(sentence(rng.randint(20, 40)) + " " + sentence(rng.randint(10, 30)) + "\n")
    return "\n".join(parts)
out.mkdir(parents=True, exist_ok=True)
for i in range(n):
    name = f"{rng.choice(nouns)}-{rng.choice(verbs)}-{i:04d}"
    d = out / name
    d.mkdir(exist_ok=True)
    desc = f"{sentence(rng.randint(10, 25))} Use when the user mentions {rng.choice(nouns)} {rng.choice(verbs)} or asks for {rng.choice(nouns)} files."
    fm = [f"name: {name}", f"description: {desc}"]
    if rng.random() < 0.6: fm.append("license: " + rng.choice(["Apache-2.0", "MIT", "Proprietary. LICENSE.txt has complete terms"]))
    if rng.random() < 0.15: fm.append("compatibility: Requires Python 3.11+, git and network access")
    if rng.random() < 0.15: fm.append("allowed-tools: Bash(git:*) Bash(jq:*) Read")
    if rng.random() < 0.5: fm += ["metadata:", "  author: example-org", f'  version: "1.{i % 7}"']
    text = "---\n" + "\n".join(fm) + "\n---\n\n" + body(name, rng.randint(1800, 4500))
    (d / "SKILL.md").write_text(text, encoding="utf-8")
    if rng.random() < 0.3:
        (d / "scripts").mkdir(exist_ok=True); (d / "scripts" / "run.py").write_text("print('ok')\n")
    if rng.random() < 0.3:
        (d / "references").mkdir(exist_ok=True); (d / "references" / "REFERENCE.md").write_text("# Reference\n\n" + sentence(30) + "\n")
