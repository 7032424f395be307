#!/usr/bin/env python3
"""Time `skillbase serve` from spawn to /readyz answering 200, several times.

  serve_start.py [--token TOKEN] RUNS PORT -- SKILLBASE ARGS...     e.g.
  serve_start.py 10 18391 -- target/release/skillbase --db store.db serve --listen 127.0.0.1:18391

Each run: spawn the command, poll http://127.0.0.1:PORT/readyz every millisecond until it answers
200 ("ready"), read the server's RSS, then SIGTERM and wait for it to exit ("stop"). With
--token (an agent token), it also times the first MCP request after ready: one `skills/list`
page at /mcp on the 2026-07-28 wire ("first list"; the agent's view is built on first use).
Prints each run and the median and range; time.perf_counter in this process, standard library
only.
"""

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import time


def ready(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        c.request("GET", "/readyz")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


def first_list(port, token):
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "skillbase-bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "skills/list", "params": {"_meta": meta}}
    )
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(
        "POST",
        "/mcp",
        body,
        {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "skills/list",
        },
    )
    r = c.getresponse()
    data = json.loads(r.read())
    c.close()
    if r.status != 200 or "result" not in data:
        sys.exit(f"skills/list: {r.status} {data}")
    return len(data["result"]["skills"])


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    args = sys.argv[1:]
    token = None
    if args[:1] == ["--token"]:
        token, args = args[1], args[2:]
    if len(args) < 4 or args[2] != "--":
        sys.exit(__doc__)
    runs, port, argv = int(args[0]), int(args[1]), args[3:]
    if ready(port):
        sys.exit(f"something already answers on port {port}")
    print(f"load before: {open('/proc/loadavg').read().strip()}", flush=True)
    starts, stops, rss, firsts = [], [], [], []
    for r in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not ready(port):
            if p.poll() is not None:
                sys.exit(f"the server exited with {p.returncode} before it was ready")
            if time.perf_counter() - t0 > 60:
                p.kill()
                sys.exit("not ready after 60 s")
            time.sleep(0.001)
        t_ready = time.perf_counter() - t0
        mem = rss_mb(p.pid)
        extra = ""
        if token:
            t1 = time.perf_counter()
            n = first_list(port, token)
            firsts.append(time.perf_counter() - t1)
            extra = f", first list ({n} skills) {firsts[-1] * 1e3:6.1f} ms"
        t1 = time.perf_counter()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
        t_stop = time.perf_counter() - t1
        starts.append(t_ready)
        stops.append(t_stop)
        rss.append(mem)
        print(
            f"  run {r + 1:2}: ready in {t_ready * 1e3:7.1f} ms, RSS {mem:6.1f} MB, "
            f"stopped in {t_stop * 1e3:6.1f} ms (exit {p.returncode}){extra}",
            flush=True,
        )
    print(f"load after: {open('/proc/loadavg').read().strip()}")
    print(
        f"ready: median {statistics.median(starts) * 1e3:.1f} ms, "
        f"range {min(starts) * 1e3:.1f} .. {max(starts) * 1e3:.1f} ms over {runs} runs; "
        f"RSS at ready median {statistics.median(rss):.1f} MB; "
        f"stop median {statistics.median(stops) * 1e3:.1f} ms"
    )
    if firsts:
        print(
            f"first skills/list after ready: median {statistics.median(firsts) * 1e3:.1f} ms, "
            f"range {min(firsts) * 1e3:.1f} .. {max(firsts) * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
