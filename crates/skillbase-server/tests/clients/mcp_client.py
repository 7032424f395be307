"""Drive `skillbase` with the official MCP Python SDK (`mcp`, pinned in .ci/clients).

One run is one transport:

    python mcp_client.py stdio     --bin B --db DB --fixture DIR --agent A
    python mcp_client.py stateless --bin B --db DB --fixture DIR --url URL --token T
    python mcp_client.py stateful  --bin B --db DB --fixture DIR --url URL --token T

`stdio` spawns `B --db DB --seed DIR/skills --config DIR/skillbase.toml mcp --agent A` and lets
the SDK negotiate as it does by default; `stateless` is the SDK's default over HTTP (it probes
`server/discover` and speaks 2026-07-28); `stateful` forces the 2025-11-25 `initialize` handshake
(`mode="legacy"`). Every step asserts what it got against the fixture's files on disk: the
closed `load_skill` enum, the body `load_skill` returns, a refusal with `isError`, a skill file's
exact text over `resources/read`, the Skills extension's methods, and the `list_changed`
notifications after `B --db DB put DIR/late/late-arrival` run as a separate process while the
client is connected. Prints one `PASS`/`FAIL` line per check; exits 1 on any `FAIL`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import time
import traceback
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from pydantic import TypeAdapter

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

NOTIFY_WAIT_S = 10.0
LATE = "late-arrival"
SKILLS_EXT = "io.modelcontextprotocol/skills"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
REFUSAL = re.compile(r"^refused \(([a-z_]+)\): \S")


# --- what the fixture says the server must serve ----------------------------------------------
class Fixture:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.skills = sorted(p.name for p in (root / "skills").iterdir() if (p / "SKILL.md").is_file())
        self.late_dir = root / "late" / LATE

    def file_bytes(self, skill: str, rel: str) -> bytes:
        base = self.late_dir if skill == LATE else self.root / "skills" / skill
        return (base / rel).read_bytes()

    def files(self, skill: str) -> list[str]:
        base = self.late_dir if skill == LATE else self.root / "skills" / skill
        return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())

    def body(self, skill: str) -> str:
        """SKILL.md after its frontmatter, as `load_skill` shows it."""
        text = self.file_bytes(skill, "SKILL.md").decode()
        parts = text.split("---\n", 2)
        return parts[2].strip() if len(parts) == 3 else text.strip()

    def digest(self, skill: str, rel: str) -> str:
        return "sha256:" + hashlib.sha256(self.file_bytes(skill, rel)).hexdigest()


# --- a tiny check recorder --------------------------------------------------------------------
class Checks:
    def __init__(self, label: str) -> None:
        self.label = label
        self.failed = 0

    def ok(self, name: str, cond: bool, detail: Any = "") -> bool:
        if cond:
            print(f"  PASS {name}", flush=True)
        else:
            self.failed += 1
            print(f"  FAIL {name}: {detail}", flush=True)
        return cond

    def step(self, name: str):
        checks = self

        class _Step:
            def __enter__(self):
                return self

            def __exit__(self, et, ev, tb):
                if et is None:
                    return False
                checks.failed += 1
                print(f"  FAIL {name}: raised {et.__name__}: {ev}", flush=True)
                traceback.print_exception(et, ev, tb, file=sys.stderr)
                return not issubclass(et, (KeyboardInterrupt, anyio.get_cancelled_exc_class()))

        return _Step()


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def load_enum(tools: types.ListToolsResult) -> list[str] | None:
    for t in tools.tools:
        if t.name == "load_skill":
            return t.input_schema.get("properties", {}).get("name", {}).get("enum")
    return None


async def custom(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A Skills extension request (the SDK has no typed method for them)."""
    req = types.Request[dict[str, Any] | None, str](method=method, params=params)
    return await client.session.send_request(req, TypeAdapter(dict[str, Any]))


def put_late(args: argparse.Namespace, fx: Fixture) -> subprocess.CompletedProcess[str]:
    """Another process writes a new skill into the same database."""
    return subprocess.run(
        [args.bin, "--db", args.db, "put", str(fx.late_dir), "-m", "written by another process"],
        capture_output=True,
        text=True,
        timeout=60,
    )


# --- the scenario -----------------------------------------------------------------------------
async def scenario(
    client: Client, args: argparse.Namespace, fx: Fixture, ck: Checks, notes: dict[str, anyio.Event], untagged: list[str]
) -> None:
    remote = args.transport != "stdio"
    modern = client.protocol_version == "2026-07-28"

    with ck.step("initialize"):
        want = {"stateless": "2026-07-28", "stateful": "2025-11-25"}.get(args.transport)
        ck.ok(
            "initialize: protocol version",
            client.protocol_version == want if want else client.protocol_version in ("2026-07-28", "2025-11-25"),
            f"negotiated {client.protocol_version!r}, wanted {want or 'a current one'}",
        )
        info = client.server_info
        ck.ok("initialize: serverInfo names skillbase", info is not None and info.name == "skillbase", info)
        caps = client.session.server_capabilities
        ck.ok(
            "initialize: tools and resources with listChanged",
            caps is not None
            and caps.tools is not None
            and caps.tools.list_changed is True
            and caps.resources is not None
            and caps.resources.list_changed is True,
            caps,
        )
        ext = (caps.extensions or {}) if caps is not None else {}
        ck.ok(f"initialize: the {SKILLS_EXT} extension", SKILLS_EXT in ext, ext)

    with ck.step("tools/list"):
        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        enum = load_enum(tools)
        ck.ok("tools/list: load_skill's name is the closed enum of the fixture's skills", enum is not None and sorted(enum) == fx.skills, f"enum {enum}, wanted {fx.skills}")
        ck.ok("tools/list: web_fetch (not granted) is not offered", "web_fetch" not in names, names)
        ls = next((t for t in tools.tools if t.name == "load_skill"), None)
        ck.ok("tools/list: load_skill requires name", ls is not None and "name" in ls.input_schema.get("required", []), ls)

    skill, rel = "release-checklist", "references/steps.md"
    file_uri = f"skill://{skill}/{rel}"
    with ck.step("load_skill"):
        r = await client.call_tool("load_skill", {"name": skill})
        t = text_of(r)
        ck.ok("load_skill: not an error", r.is_error is not True, t[:300])
        ck.ok("load_skill: the skill's body", fx.body(skill) in t, t[:500])
        if remote:
            want = f'<file uri="{file_uri}" digest="{fx.digest(skill, rel)}">{rel}</file>'
            ck.ok("load_skill: the file named by skill:// URI and digest", want in t, t[-400:])
        else:
            ck.ok("load_skill: the file named", rel in t, t[-400:])
            m = re.search(r"^Skill directory: (.+)$", t, re.M)
            reachable = m is not None and (Path(m.group(1)) / rel).is_file()
            ck.ok(
                "load_skill: the skill directory given over stdio is one the client can open",
                reachable,
                m.group(1) if m else "no 'Skill directory:' line",
            )

    with ck.step("refusal"):
        r = await client.call_tool("load_skill", {"name": "no-such-skill"})
        t = text_of(r)
        ck.ok("refusal: load_skill of an unknown name is isError with a reason", r.is_error is True and REFUSAL.match(t) is not None, f"isError={r.is_error} {t[:300]}")
        r = await client.call_tool("web_fetch", {"url": "https://example.com/"})
        t = text_of(r)
        ck.ok("refusal: a tool the agent is not granted is isError with a reason", r.is_error is True and REFUSAL.match(t) is not None, f"isError={r.is_error} {t[:300]}")

    with ck.step("resources/read"):
        rr = await client.read_resource(file_uri)
        c = rr.contents[0] if rr.contents else None
        ck.ok(
            "resources/read: a skill's file, exact text",
            isinstance(c, types.TextResourceContents) and c.text == fx.file_bytes(skill, rel).decode() and str(c.uri) == file_uri,
            c,
        )
        ck.ok("resources/read: text/markdown", c is not None and c.mime_type == "text/markdown", c and c.mime_type)
        rr = await client.read_resource(f"skill://{skill}/SKILL.md")
        c = rr.contents[0] if rr.contents else None
        ck.ok("resources/read: SKILL.md, exact bytes", isinstance(c, types.TextResourceContents) and c.text == fx.file_bytes(skill, "SKILL.md").decode(), c)
        try:
            await client.read_resource("skill://no-such-skill/SKILL.md")
            ck.ok("resources/read: an unknown skill is -32602", False, "answered a result")
        except MCPError as e:
            ck.ok("resources/read: an unknown skill is -32602", e.code == -32602, f"code {e.code}: {e}")
        try:
            await custom(client, "resources/read", {"url": file_uri})
            ck.ok("resources/read without uri (bad params) is -32602", False, "answered a result")
        except MCPError as e:
            ck.ok("resources/read without uri (bad params) is -32602", e.code == -32602, f"code {e.code}: {e}")
        try:
            await custom(client, "skills/nonexistent", {})
            ck.ok("an unknown method is -32601", False, "answered a result")
        except MCPError as e:
            ck.ok("an unknown method is -32601", e.code == -32601, f"code {e.code}: {e}")
        lr = await client.list_resources()
        ck.ok("resources/list: each skill's SKILL.md", sorted(str(x.uri) for x in lr.resources) == [f"skill://{s}/SKILL.md" for s in fx.skills], [str(x.uri) for x in lr.resources])

    with ck.step("skills extension"):
        sl = await custom(client, "skills/list", {})
        by_name = {s["frontmatter"]["name"]: s for s in sl.get("skills", [])}
        ck.ok("skills/list: the fixture's skills", sorted(by_name) == fx.skills, sorted(by_name))
        s = by_name.get(skill, {})
        got = {x["uri"]: (x.get("digest"), x.get("size")) for x in s.get("resources", [])}
        want = {f"skill://{skill}/{f}": (fx.digest(skill, f), len(fx.file_bytes(skill, f))) for f in fx.files(skill)}
        ck.ok("skills/list: every file with its SHA-256 digest and size", got == want, f"got {got}, wanted {want}")
        g = await custom(client, "skills/get", {"uri": f"skill://{skill}/SKILL.md"})
        fm = g.get("skill", {}).get("frontmatter", {})
        ck.ok("skills/get: the skill's frontmatter", fm.get("name") == skill and "release" in fm.get("description", ""), g)
        d = await custom(client, "resources/directory/read", {"uri": f"skill://{skill}"})
        kids = sorted((x["uri"], x.get("mimeType")) for x in d.get("resources", []))
        ck.ok(
            "resources/directory/read: the skill's root",
            kids == sorted([(f"skill://{skill}/SKILL.md", "text/markdown"), (f"skill://{skill}/references", "inode/directory")]),
            kids,
        )
        d = await custom(client, "resources/directory/read", {"uri": f"skill://{skill}/references"})
        kids = sorted(x["uri"] for x in d.get("resources", []))
        ck.ok("resources/directory/read: a folder", kids == [file_uri], kids)

    with ck.step("list_changed after another process's write"):
        if modern:
            # 2026-07-28: change notifications ride a subscriptions/listen stream.
            async with client.listen(tools_list_changed=True, resources_list_changed=True) as sub:
                h = sub.honored
                ck.ok("subscriptions/listen: both list_changed honoured", h is not None and h.tools_list_changed is True and h.resources_list_changed is True, h)
                started = time.monotonic()
                p = put_late(args, fx)
                ck.ok("skillbase put (another process)", p.returncode == 0, p.stderr.strip() or p.stdout.strip())
                seen: set[str] = set()
                with anyio.move_on_after(NOTIFY_WAIT_S):
                    async for ev in sub:
                        seen.add(type(ev).__name__)
                        if {"ToolsListChanged", "ResourcesListChanged"} <= seen:
                            break
                took = time.monotonic() - started
                ck.ok(f"notifications/tools/list_changed within {NOTIFY_WAIT_S:.0f} s", "ToolsListChanged" in seen, f"events {sorted(seen)} after {took:.1f} s")
                ck.ok(f"notifications/resources/list_changed within {NOTIFY_WAIT_S:.0f} s", "ResourcesListChanged" in seen, f"events {sorted(seen)} after {took:.1f} s")
                await anyio.sleep(0.3)  # let any stray notification of the same change arrive
            name = "2026-07-28: every list_changed rides the subscriptions/listen stream (carries its subscriptionId)"
            ck.ok(name, not untagged, f"untagged: {untagged}")
        else:
            started = time.monotonic()
            p = put_late(args, fx)
            ck.ok("skillbase put (another process)", p.returncode == 0, p.stderr.strip() or p.stdout.strip())
            for method in ("notifications/tools/list_changed", "notifications/resources/list_changed"):
                with anyio.move_on_after(max(0.1, NOTIFY_WAIT_S - (time.monotonic() - started))):
                    await notes[method].wait()
                ck.ok(f"{method} within {NOTIFY_WAIT_S:.0f} s", notes[method].is_set(), f"not received after {time.monotonic() - started:.1f} s")
        tools = await client.list_tools()
        enum = load_enum(tools)
        want = sorted(fx.skills + [LATE])
        ck.ok("tools/list after the write: the enum holds the new skill", enum is not None and sorted(enum) == want, f"enum {enum}, wanted {want}")
        r = await client.call_tool("load_skill", {"name": LATE})
        t = text_of(r)
        ck.ok("load_skill of the new skill: its body", r.is_error is not True and fx.body(LATE) in t, f"isError={r.is_error} {t[:300]}")
        sl = await custom(client, "skills/list", {})
        ck.ok("skills/list after the write: the new skill", LATE in {s["frontmatter"]["name"] for s in sl.get("skills", [])}, sl)


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("transport", choices=["stdio", "stateless", "stateful"])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--fixture", required=True, type=Path)
    ap.add_argument("--agent")
    ap.add_argument("--url")
    ap.add_argument("--token")
    ap.add_argument("--server-log", default=os.devnull)
    args = ap.parse_args()
    fx = Fixture(args.fixture)
    ck = Checks(f"python {args.transport}")

    untagged: list[str] = []
    notes = {m: anyio.Event() for m in ("notifications/tools/list_changed", "notifications/resources/list_changed")}

    async def on_message(m: Any) -> None:
        method = getattr(m, "method", None)
        if method in notes:
            meta = getattr(getattr(m, "params", None), "meta", None) or {}
            if SUBSCRIPTION_ID not in meta:
                untagged.append(method)
            notes[method].set()

    mode = {"stateful": "legacy"}.get(args.transport, "auto")

    @asynccontextmanager
    async def connect():
        if args.transport == "stdio":
            params = StdioServerParameters(
                command=args.bin,
                args=["--db", args.db, "--seed", str(args.fixture / "skills"), "--config", str(args.fixture / "skillbase.toml"), "mcp", "--agent", args.agent],
                env=dict(os.environ),
            )
            with open(args.server_log, "a") as errlog:
                async with Client(stdio_client(params, errlog=errlog), message_handler=on_message, mode=mode) as client:
                    yield client
        else:
            # The SDK's documented way to send a header: its HTTP client, given to the transport.
            auth = {"Authorization": f"Bearer {args.token}"}
            async with httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(30, read=300)) as http:
                async with Client(streamable_http_client(args.url, http_client=http), message_handler=on_message, mode=mode) as client:
                    yield client

    try:
        with anyio.fail_after(60):
            async with connect() as client:
                await scenario(client, args, fx, ck, notes, untagged)
            # A second conversation (a new connection, with the same token over HTTP): it has not
            # seen the skill, so load_skill must give the body again (issue 15, item 2).
            with ck.step("a second conversation"):
                async with connect() as client:
                    r = await client.call_tool("load_skill", {"name": "release-checklist"})
                    t = text_of(r)
                    ck.ok("a second conversation: load_skill gives the body again", r.is_error is not True and fx.body("release-checklist") in t, t[:300])
    except BaseException as e:  # connect failures, the overall timeout
        if isinstance(e, KeyboardInterrupt):
            raise
        ck.failed += 1
        print(f"  FAIL connect/run: {type(e).__name__}: {e}", flush=True)
        traceback.print_exc(file=sys.stderr)
    return 1 if ck.failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
