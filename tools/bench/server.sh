#!/usr/bin/env bash
# Server benchmarks (issue 6, "Speed"), in one session:
#   1. A full MCP session over stdio on the same 1,000 skills (tools/bench/gen_skills.py), side
#      by side: Skillbase (`skillbase mcp`) three ways and the Python agentskills-mcp-server 0.7.0,
#      driven by one client (tools/bench/mcp_session.py, 2026-07-28 wire), runs interleaved; then
#      the same sessions as whole processes under hyperfine (client start included).
#   2. Start-up: `skillbase serve` over a store holding 10,000 skills, spawn to /readyz = 200,
#      and the first skills/list after it (tools/bench/serve_start.py).
#   3. `cargo bench -p skillbase-server --bench http`: tools/call of load_skill over loopback HTTP
#      against a minimal axum handler returning the same bytes.
#
#   tools/bench/server.sh
#   RUNS=10 PY_RUNS=5 START_RUNS=20 tools/bench/server.sh
#   SKIP_BUILD=1 SKIP_HTTP=1 tools/bench/server.sh      # binary already built; no criterion
#   SKIP_MCP=1 / SKIP_START=1 / SKIP_HYPERFINE=1         # leave a part out
#
# Needs python3 and, for the comparison, the venv with agentskills-mcp-server 0.7.0
# (PYBENCH=$HOME/.cache/skillbase/pybench: python3.12 -m venv "$PYBENCH" &&
#  "$PYBENCH/bin/pip" install 'agentskills-mcp-server[fs]==0.7.0'); hyperfine for part 1's
# whole-process figures (apt-get install -y hyperfine).
# Writes to ${TMPDIR:-/tmp}/skillbase-server-bench: the skills, the databases, results/*.
set -euo pipefail

RUNS=${RUNS:-10}             # interleaved MCP sessions per Skillbase variant
PY_RUNS=${PY_RUNS:-$RUNS}    # ... and for the Python server (about 12 s each)
START_RUNS=${START_RUNS:-20} # serve start-ups at 10,000 skills
PORT=${PORT:-18391}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${TMPDIR:-/tmp}/skillbase-server-bench
RES=$WORK/results
PYBENCH=${PYBENCH:-$HOME/.cache/skillbase/pybench}
PYSERVER=$PYBENCH/bin/agentskills-mcp-server
BIN=${BIN:-${CARGO_TARGET_DIR:-$REPO/target}/release/skillbase}
export SKILLBASE_HOME=$WORK/home
mkdir -p "$RES" "$SKILLBASE_HOME"

if [ -z "${SKIP_BUILD:-}" ]; then
    (cd "$REPO" && cargo build --release -p skillbase-cli)
fi
[ -x "$BIN" ] || { echo "no binary at $BIN" >&2; exit 2; }

gen() { # N DIR
    if [ ! -f "$2/.complete" ]; then
        rm -rf "$2"
        python3 "$HERE/gen_skills.py" "$2" "$1" >/dev/null
        touch "$2/.complete"
    fi
}

{
    echo "date: $(date -u +%FT%TZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "kernel: $(uname -r)"
    echo "commit: $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "binary: $BIN ($(stat -c %y "$BIN" | cut -d. -f1))"
    echo "uptime: $(uptime)"
} | tee "$RES/machine.txt"

printf '[agents.bench]\nskills = "all"\n' >"$WORK/bench.toml"

# --- 1. the MCP session, 1,000 skills ------------------------------------------------------------
if [ -z "${SKIP_MCP:-}" ]; then
    SK=$WORK/skills1000
    gen 1000 "$SK"
    # The Python server: one fs provider per skill folder, max_skills raised to cover 1,000.
    python3 - "$SK" "$WORK/py1k.json" <<'EOF'
import json, os, sys
root, out = sys.argv[1], sys.argv[2]
ids = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
json.dump({"name": "bench1k", "max_skills": len(ids), "page_size": 100,
           "skills": [{"id": d, "provider": "fs", "options": {"root": root}} for d in ids]},
          open(out, "w"))
EOF
    # Skillbase: (a) imported once, (b) synced once from the seed folder (every start syncs it
    # again: reads and hashes the folder, finds nothing changed), (c) a fresh database each run,
    # filled from the seed folder at start (what the Python server does: capture everything).
    DB_IMPORT=$WORK/import1k.db
    DB_SEEDED=$WORK/seeded1k.db
    DB_FRESH=$WORK/fresh1k.db
    rm -f "$DB_IMPORT"* "$DB_SEEDED"*
    "$BIN" --db "$DB_IMPORT" --config "$WORK/bench.toml" import "$SK" >/dev/null
    "$BIN" --db "$DB_SEEDED" --config "$WORK/bench.toml" --seed "$SK" agent list >/dev/null 2>&1
    servers=(
        --server skillbase-steady "$BIN --db $DB_IMPORT mcp --agent bench"
        --server skillbase-seed-synced "$BIN --db $DB_SEEDED --seed $SK mcp --agent bench"
        --server skillbase-seed-fresh "$BIN --db $DB_FRESH --config $WORK/bench.toml --seed $SK mcp --agent bench"
        --prepare "rm -f $DB_FRESH $DB_FRESH-wal $DB_FRESH-shm"
    )
    if [ -x "$PYSERVER" ]; then
        servers+=(--server python-agentskills-mcp-server "$PYSERVER --config $WORK/py1k.json")
    else
        echo "no $PYSERVER: Skillbase only" >&2
    fi
    python3 "$HERE/mcp_session.py" --runs "$RUNS" --warmup 1 --json "$RES/mcp_session.json" \
        "${servers[@]}" | tee "$RES/mcp_session.txt"

    # Whole processes: the client's own start and checks included, the same for every server.
    if [ -z "${SKIP_HYPERFINE:-}" ] && command -v hyperfine >/dev/null; then
        one() { echo "python3 $HERE/mcp_session.py --runs 1 --warmup 0 --server $1 '$2'"; }
        hyperfine --warmup 1 --runs "$RUNS" --export-json "$RES/hf_skillbase.json" \
            --export-markdown "$RES/hf_skillbase.md" \
            -n 'client only (python3 -c pass)' 'python3 -c pass' \
            -n skillbase-steady "$(one sb "$BIN --db $DB_IMPORT mcp --agent bench")" \
            -n skillbase-seed-fresh --prepare "rm -f $DB_FRESH $DB_FRESH-wal $DB_FRESH-shm" \
            "$(one sb "$BIN --db $DB_FRESH --config $WORK/bench.toml --seed $SK mcp --agent bench")"
        if [ -x "$PYSERVER" ]; then
            hyperfine --runs "$PY_RUNS" --export-json "$RES/hf_python.json" \
                --export-markdown "$RES/hf_python.md" \
                -n python-agentskills-mcp-server "$(one py "$PYSERVER --config $WORK/py1k.json")"
        fi
    fi
fi

# --- 2. start-up with 10,000 skills ------------------------------------------------------------
if [ -z "${SKIP_START:-}" ]; then
    SK10=$WORK/skills10000
    gen 10000 "$SK10"
    DB10=$WORK/store10k.db
    if [ ! -f "$DB10.complete" ]; then
        rm -f "$DB10" "$DB10"-*
        "$BIN" --db "$DB10" --config "$WORK/bench.toml" import "$SK10" >/dev/null
        touch "$DB10.complete"
    fi
    echo "store: $("$BIN" --db "$DB10" list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') skills in $DB10"
    # An agent token for the first skills/list after ready (the agent's view is built then).
    TOKEN=$("$BIN" --db "$DB10" token create --agent bench --label bench 2>/dev/null)
    python3 "$HERE/serve_start.py" --token "$TOKEN" "$START_RUNS" "$PORT" -- \
        "$BIN" --db "$DB10" serve --listen "127.0.0.1:$PORT" --log-format json | tee "$RES/serve_start.txt"
fi

# --- 3. load_skill over loopback HTTP (criterion) ----------------------------------------------
if [ -z "${SKIP_HTTP:-}" ]; then
    (cd "$REPO" && cargo bench -p skillbase-server --bench http) | tee "$RES/http.txt"
fi
echo "uptime after: $(uptime)" | tee -a "$RES/machine.txt"
echo "results in $RES"
