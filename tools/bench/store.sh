#!/usr/bin/env bash
# Store benchmarks, in one session:
#   1. `cargo bench -p skillbase-store --bench store`: import, cold start, revision writes (SQLite,
#      and PostgreSQL when SKILLBASE_TEST_POSTGRES_URL is set), index lookups and index memory,
#      on N generated skills; prints a table of figures against the targets.
#   2. The release `skillbase` binary on the same N skills (whole processes): import into a fresh
#      SQLite file, `list --json` (open + index + print), `show`, and a `put` of one revision.
#
#   tools/bench/store.sh                 # 10,000 skills
#   N=1000 tools/bench/store.sh
#   SKIP_BUILD=1 SKIP_CARGO_BENCH=1 tools/bench/store.sh   # binary rows only
#
# Needs hyperfine and GNU time (`apt-get install -y hyperfine time`).
# Writes to ${TMPDIR:-/tmp}/skillbase-store-bench: the skills, the database, results/*.
set -euo pipefail

N=${N:-10000}
RUNS=${RUNS:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${TMPDIR:-/tmp}/skillbase-store-bench
SK=$WORK/skills$N
RES=$WORK/results
DB=$WORK/store$N.db
BIN=${BIN:-$REPO/target/release/skillbase}

for tool in hyperfine /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y hyperfine time)" >&2; exit 2; }
done
mkdir -p "$RES"

if [ -z "${SKIP_BUILD:-}" ]; then
    (cd "$REPO" && cargo build --release -p skillbase-cli && cargo bench -p skillbase-store --bench store --no-run)
fi
[ -x "$BIN" ] || { echo "no binary at $BIN" >&2; exit 2; }

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"

if [ -z "${SKIP_CARGO_BENCH:-}" ]; then
    (cd "$REPO" && SKILLBASE_BENCH_N=$N cargo bench -p skillbase-store --bench store) \
        | tee "$RES/cargo-bench.txt"
fi

# The bench binary generates the skills (the same generator as the in-process figures).
BENCH_BIN=$(ls -t "$REPO"/target/release/deps/store-* | grep -v '\.d$' | head -1)
if [ ! -f "$SK/.complete" ]; then
    rm -rf "$SK"
    SKILLBASE_BENCH_N=$N SKILLBASE_BENCH_GEN_DIR="$SK" "$BENCH_BIN"
    touch "$SK/.complete"
fi

export SKILLBASE_HOME=$WORK/home
rm -f "$DB" "$DB"-*
hyperfine --runs "$RUNS" --prepare "rm -f $DB $DB-wal $DB-shm" \
    --export-markdown "$RES/import.md" --export-json "$RES/import.json" \
    "$BIN --db $DB import --json $SK"
"$BIN" --db "$DB" import "$SK" >/dev/null
hyperfine --warmup 1 --runs "$RUNS" \
    --export-markdown "$RES/read.md" --export-json "$RES/read.json" \
    "$BIN --db $DB list --json" \
    "$BIN --db $DB show bench-skill-05000" \
    "$BIN --db $DB history bench-skill-05000"

# One revision written by a whole process (open + index + write + refresh), alternating content.
EDIT=$WORK/edit/bench-skill-00042
mkdir -p "$EDIT"
hyperfine --runs "$RUNS" --export-markdown "$RES/put.md" --export-json "$RES/put.json" \
    --prepare "printf -- '---\nname: bench-skill-00042\ndescription: Edited. Use when asked.\n---\nedit %s\n' \$(date +%s%N) > $EDIT/SKILL.md" \
    "$BIN --db $DB put $EDIT"

# Peak memory of whole processes.
{
    echo "import (fresh db):"
    rm -f "$DB" "$DB"-*
    /usr/bin/time -f "  %e s, max RSS %M KB" "$BIN" --db "$DB" import "$SK" >/dev/null
    echo "list --json:"
    /usr/bin/time -f "  %e s, max RSS %M KB" "$BIN" --db "$DB" list --json >/dev/null
} 2>&1 | tee "$RES/mem.txt"
ls -l "$DB" | tee -a "$RES/mem.txt"
echo "results in $RES"
