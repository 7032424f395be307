#!/usr/bin/env bash
# Whole-process benchmarks of the `skillbase` release binary against the reference validator
# (PyPI skills-ref 0.1.1, CLI `agentskills`), on N generated skills, in one session.
#
#   tools/bench/run.sh            # 10,000 skills, everything
#   N=1000 RUNS=10 REF_RUNS=2 tools/bench/run.sh
#   SKIP_BUILD=1 SKIP_REF=1 tools/bench/run.sh   # Skillbase rows only, binary already built
#
# Needs: python3, hyperfine and GNU time (`apt-get install -y hyperfine time`).
# Writes to ${TMPDIR:-/tmp}/skillbase-bench: the skills, results/*.json|md, mem.txt, prompt outputs.
set -euo pipefail

N=${N:-10000}
RUNS=${RUNS:-20}          # hyperfine runs for each Skillbase command
REF_RUNS=${REF_RUNS:-3}   # hyperfine runs for each reference command (about 30 s each at 10k)
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${TMPDIR:-/tmp}/skillbase-bench
SK=$WORK/skills$N
RES=$WORK/results
VENV=${VENV:-/tmp/skills-ref-venv}
BIN=${BIN:-$REPO/target/release/skillbase}

for tool in hyperfine /usr/bin/time python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y hyperfine time)" >&2; exit 2; }
done

if [ -z "${SKIP_BUILD:-}" ]; then
    (cd "$REPO" && cargo build --release -p skillbase-cli)
fi
[ -x "$BIN" ] || { echo "no binary at $BIN" >&2; exit 2; }

if [ -z "${SKIP_REF:-}" ] && [ ! -x "$VENV/bin/agentskills" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q skills-ref==0.1.1
fi

mkdir -p "$RES"
if [ ! -f "$SK/.complete" ]; then
    rm -rf "$SK"
    python3 "$HERE/gen_skills.py" "$SK" "$N"
    touch "$SK/.complete"
fi
echo "skills: $(find "$SK" -name SKILL.md | wc -l) in $SK ($(du -sh "$SK" | cut -f1))"

{
    echo "date: $(date -u +%FT%TZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "kernel: $(uname -r)"
    echo "commit: $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "hyperfine: $(hyperfine --version)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$RES/machine.txt"

cd "$WORK"
S=skills$N   # relative paths keep the command lines short; to-prompt prints absolute paths anyway

# --- wall time --------------------------------------------------------------------------------
# Skillbase: many runs. Shell mode, so `$S/*` is expanded by the shell (the shell's own start-up
# is subtracted by hyperfine; the glob expansion is included, for both tools alike).
hyperfine --warmup 3 --runs "$RUNS" --export-json "$RES/skillbase.json" \
    --export-markdown "$RES/skillbase.md" \
    -n 'skillbase validate DIR' "$BIN validate $S" \
    -n 'skillbase validate --spec DIR' "$BIN validate --spec $S" \
    -n 'skillbase to-prompt DIR/*' "$BIN to-prompt $S/*"

if [ -z "${SKIP_REF:-}" ]; then
    hyperfine --warmup 1 --runs "$REF_RUNS" --export-json "$RES/reference.json" \
        --export-markdown "$RES/reference.md" \
        -n 'reference validate (sr_validate_all.py DIR)' "$VENV/bin/python $HERE/sr_validate_all.py $S" \
        -n 'reference agentskills to-prompt DIR/*' "$VENV/bin/agentskills to-prompt $S/*"
fi

# --- peak memory ------------------------------------------------------------------------------
: >"$RES/mem.txt"
mem() { # label, command (run by sh -c with exec, so the figure is the tool's own)
    /usr/bin/time -a -o "$RES/mem.txt" -f "%e s %M KB %U user %S sys  $1" sh -c "exec $2 >/dev/null"
}
for i in 1 2 3; do
    mem 'skillbase validate DIR' "$BIN validate $S"
    mem 'skillbase validate --spec DIR' "$BIN validate --spec $S"
    mem 'skillbase to-prompt DIR/*' "$BIN to-prompt $S/*"
done
if [ -z "${SKIP_REF:-}" ]; then
    mem 'reference validate (sr_validate_all.py DIR)' "$VENV/bin/python $HERE/sr_validate_all.py $S"
    mem 'reference agentskills to-prompt DIR/*' "$VENV/bin/agentskills to-prompt $S/*"
fi
echo "--- peak memory (wall, max RSS, CPU)"
cat "$RES/mem.txt"

# --- correctness of what was timed ------------------------------------------------------------
echo "--- checks"
"$BIN" validate "$S" >"$RES/skillbase-validate.txt" && echo "skillbase validate: exit 0, $(grep -c '^Valid skill' "$RES/skillbase-validate.txt") valid"
"$BIN" validate --spec "$S" >/dev/null && echo "skillbase validate --spec: exit 0"
"$BIN" to-prompt "$S"/* >"$RES/prompt-skillbase.txt"
echo "skillbase to-prompt md5: $(md5sum <"$RES/prompt-skillbase.txt" | cut -d' ' -f1)"
if [ -z "${SKIP_REF:-}" ]; then
    "$VENV/bin/python" "$HERE/sr_validate_all.py" "$S" | sed 's/^/reference validate: /'
    "$VENV/bin/agentskills" to-prompt "$S"/* >"$RES/prompt-reference.txt"
    echo "reference to-prompt md5: $(md5sum <"$RES/prompt-reference.txt" | cut -d' ' -f1)"
    if cmp -s "$RES/prompt-skillbase.txt" "$RES/prompt-reference.txt"; then
        echo "to-prompt: byte-identical ($(wc -c <"$RES/prompt-skillbase.txt") bytes)"
    else
        echo "to-prompt: DIFFERENT"; diff "$RES/prompt-skillbase.txt" "$RES/prompt-reference.txt" | head -20
    fi
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RES/machine.txt"
echo "results in $RES"
