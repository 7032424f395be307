#!/usr/bin/env python3
"""A full MCP session over stdio, timed the same way against several servers.

One raw JSON-RPC client (standard library only, so its own start-up is cheap and identical for
every server) runs the session of issue 6's benchmark against each server command:

  spawn the server -> server/discover -> skills/list, every page -> skills/get (first skill)
  -> resources/read (its SKILL.md)

on the 2026-07-28 wire (stateless: no initialize; every request carries `_meta` with the protocol
version, client info and capabilities), the only wire both Skillbase and agentskills-mcp-server
serve the Skills extension on. Time is taken with time.perf_counter inside the client: from just
before the server is spawned to the last response ("session"), and on until the server has exited
after stdin is closed ("process"). Runs are interleaved (server A, B, C, A, B, C, ...) so the
machine's noise falls on every server alike.

After the runs it checks that every server returned the same work: the number of skills, their
names, the frontmatter of each, every file's URI, digest and size, and that the SKILL.md read
hashes to its listed digest.

  mcp_session.py [--runs N] [--warmup W] [--json OUT] \\
      --server NAME 'COMMAND' [--prepare 'SHELL COMMAND'] \\
      --server NAME2 'COMMAND2' ...

COMMAND is split like a shell line (shlex) and spawned directly; --prepare (optional, after the
--server it belongs to) runs through sh before each of that server's runs and is not timed.
"""

import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

PROTOCOL = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "skillbase-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class SessionError(Exception):
    pass


class Conn:
    """JSON-RPC over a child's stdin/stdout, one message per line."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 0

    def request(self, method, params=None):
        self.next_id += 1
        p = dict(params or {})
        p["_meta"] = META
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": p}
        self.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SessionError(f"{method}: the server closed stdout (exit {self.proc.poll()})")
            line = line.strip()
            if not line:
                continue
            reply = json.loads(line)
            if reply.get("id") != self.next_id or "method" in reply:
                continue  # a notification or a server-to-client request: not ours
            if "error" in reply:
                raise SessionError(f"{method}: {reply['error']}")
            return reply["result"]

    def close(self):
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        return rc


def one_session(argv, env):
    """Run the session once; returns the timings (seconds) and what the server returned."""
    t0 = time.perf_counter()
    c = Conn(argv, env)
    try:
        discover = c.request("server/discover")
        t_ready = time.perf_counter()
        caps = discover.get("capabilities", {})
        if "io.modelcontextprotocol/skills" not in caps.get("extensions", {}):
            raise SessionError(f"server/discover: no Skills extension in {caps}")
        skills, pages, cursor = [], 0, None
        while True:
            res = c.request("skills/list", {"cursor": cursor} if cursor else {})
            pages += 1
            skills.extend(res["skills"])
            cursor = res.get("nextCursor")
            if not cursor:
                break
        t_listed = time.perf_counter()
        first = skills[0]["uri"]
        got = c.request("skills/get", {"uri": first})["skill"]
        t_got = time.perf_counter()
        read = c.request("resources/read", {"uri": first})
        t_end = time.perf_counter()
    except BaseException:
        c.proc.kill()
        c.proc.wait()
        raise
    rc = c.close()
    t_exit = time.perf_counter()
    times = {
        "session": t_end - t0,
        "ready": t_ready - t0,
        "list": t_listed - t_ready,
        "get": t_got - t_listed,
        "read": t_end - t_got,
        "process": t_exit - t0,
    }
    return times, {"skills": skills, "pages": pages, "got": got, "read": read, "rc": rc}


def fingerprint(out):
    """What a session returned, reduced to what must agree between servers."""
    skills = out["skills"]
    names = [s["frontmatter"]["name"] for s in skills]
    files = sorted(
        f"{r['uri']} {r['digest']} {r['size']}" for s in skills for r in s["resources"]
    )
    fm = {s["frontmatter"]["name"]: s["frontmatter"] for s in skills}
    contents = out["read"]["contents"][0]
    text = contents.get("text")
    body = text.encode() if text is not None else None
    listed = {r["uri"]: r for r in skills[0]["resources"]}[skills[0]["uri"]]
    return {
        "count": len(skills),
        "pages": out["pages"],
        "names_sha256": hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest(),
        "unique_names": len(set(names)),
        "files": len(files),
        "files_sha256": hashlib.sha256("\n".join(files).encode()).hexdigest(),
        "frontmatter": fm,
        "first_uri": skills[0]["uri"],
        "get_matches_list": out["got"] == skills[0],
        "read_digest_ok": body is not None
        and f"sha256:{hashlib.sha256(body).hexdigest()}" == listed["digest"]
        and len(body) == listed["size"],
        "read_mime": contents.get("mimeType"),
        "sample_digests": {
            s["frontmatter"]["name"]: {r["uri"]: r["digest"] for r in s["resources"]}
            for s in skills[:: max(1, len(skills) // 5)]
        },
    }


def parse_args(argv):
    runs, warmup, out, servers = 5, 1, None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--runs":
            runs = int(argv[i + 1])
            i += 2
        elif a == "--warmup":
            warmup = int(argv[i + 1])
            i += 2
        elif a == "--json":
            out = argv[i + 1]
            i += 2
        elif a == "--server":
            servers.append({"name": argv[i + 1], "cmd": argv[i + 2], "prepare": None})
            i += 3
        elif a == "--prepare":
            servers[-1]["prepare"] = argv[i + 1]
            i += 2
        else:
            sys.exit(f"unknown argument {a!r}\n{__doc__}")
    if not servers:
        sys.exit(__doc__)
    return runs, warmup, out, servers


def stats(xs):
    return {
        "median": statistics.median(xs),
        "min": min(xs),
        "max": max(xs),
        "mean": statistics.fmean(xs),
        "n": len(xs),
    }


def main():
    runs, warmup, out_path, servers = parse_args(sys.argv[1:])
    env = dict(os.environ)
    for s in servers:
        s["argv"] = shlex.split(s["cmd"])
        s["times"] = []
        s["fp"] = None

    def run(s, record):
        if s["prepare"]:
            subprocess.run(["sh", "-c", s["prepare"]], check=True)
        times, out = one_session(s["argv"], env)
        if record:
            s["times"].append(times)
            print(
                f"  {s['name']:<22} session {times['session'] * 1e3:9.1f} ms  "
                f"(ready {times['ready'] * 1e3:8.1f}, list {times['list'] * 1e3:7.1f}, "
                f"get {times['get'] * 1e3:5.1f}, read {times['read'] * 1e3:5.1f})  "
                f"process {times['process'] * 1e3:9.1f} ms",
                flush=True,
            )
        if s["fp"] is None:
            s["fp"] = fingerprint(out)

    print(f"load before: {open('/proc/loadavg').read().strip()}", flush=True)
    for w in range(warmup):
        for s in servers:
            run(s, False)
    for r in range(runs):
        print(f"run {r + 1}/{runs}", flush=True)
        for s in servers:
            run(s, True)
    print(f"load after: {open('/proc/loadavg').read().strip()}", flush=True)

    summary = {}
    print("\nmedian [min .. max] over", runs, "runs, ms:")
    for s in servers:
        phases = {k: stats([t[k] for t in s["times"]]) for k in s["times"][0]}
        summary[s["name"]] = phases
        line = "  ".join(
            f"{k} {v['median'] * 1e3:.1f} [{v['min'] * 1e3:.1f} .. {v['max'] * 1e3:.1f}]"
            for k, v in phases.items()
        )
        print(f"  {s['name']:<22} {line}")
    base = servers[-1]
    if len(servers) > 1:
        print(f"\nratio of {base['name']} to each (medians; session / process):")
        for s in servers[:-1]:
            a, b = summary[s["name"]], summary[base["name"]]
            print(
                f"  {s['name']:<22} {b['session']['median'] / a['session']['median']:.1f}x / "
                f"{b['process']['median'] / a['process']['median']:.1f}x"
            )

    # Equal work: the same skills, frontmatter, files and digests from every server.
    print("\nsame work:")
    ok = True
    ref = servers[0]["fp"]
    for s in servers:
        fp = s["fp"]
        print(
            f"  {s['name']:<22} {fp['count']} skills in {fp['pages']} pages, "
            f"{fp['unique_names']} names, {fp['files']} files, names {fp['names_sha256'][:12]}, "
            f"files {fp['files_sha256'][:12]}, get==list {fp['get_matches_list']}, "
            f"read digest ok {fp['read_digest_ok']} ({fp['read_mime']})"
        )
        ok &= fp["get_matches_list"] is True and fp["read_digest_ok"] is True
        for key in ("count", "names_sha256", "files_sha256", "first_uri"):
            if fp[key] != ref[key]:
                ok = False
                print(f"    DIFFERS from {servers[0]['name']}: {key}")
        diff = [n for n in ref["frontmatter"] if fp["frontmatter"].get(n) != ref["frontmatter"][n]]
        if diff:
            ok = False
            print(f"    frontmatter differs for {len(diff)} skills, e.g. {diff[0]}:")
            print(f"      {servers[0]['name']}: {ref['frontmatter'][diff[0]]}")
            print(f"      {s['name']}: {fp['frontmatter'].get(diff[0])}")
    print("  ALL EQUAL" if ok else "  MISMATCH")

    if out_path:
        with open(out_path, "w") as f:
            json.dump(
                {
                    "runs": {s["name"]: s["times"] for s in servers},
                    "summary": summary,
                    "same_work": ok,
                    "fingerprints": {
                        s["name"]: {k: v for k, v in s["fp"].items() if k != "frontmatter"}
                        for s in servers
                    },
                },
                f,
                indent=1,
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
