// The scenario both TypeScript clients run (mcp_client.mjs: `@modelcontextprotocol/sdk` 1.x;
// mcp_client_v2.mjs: `@modelcontextprotocol/client` 2.x), the same steps mcp_client.py runs with
// the Python SDK. Each client file is an adapter: it builds the SDK's client and transport and
// hands `run` what differs between the SDKs. Every step asserts what it got against the
// fixture's files on disk. Prints one PASS/FAIL line per check; exits 1 on any FAIL.

import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";

const NOTIFY_WAIT_MS = 10_000;
const RUN_LIMIT_MS = 60_000;
const LATE = "late-arrival";
const SKILLS_EXT = "io.modelcontextprotocol/skills";
const REFUSAL = /^refused \(([a-z_]+)\): \S/;
const TOOLS_CHANGED = "notifications/tools/list_changed";
const RESOURCES_CHANGED = "notifications/resources/list_changed";
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";

/** The command line every client takes: `TRANSPORT --modules NM --bin B --db DB --fixture DIR ...`. */
export function cli() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      modules: { type: "string" },
      bin: { type: "string" },
      db: { type: "string" },
      fixture: { type: "string" },
      agent: { type: "string" },
      url: { type: "string" },
      token: { type: "string" },
      "server-log": { type: "string" },
    },
  });
  const transport = positionals[0];
  if (!["stdio", "stateless", "stateful"].includes(transport) || !values.modules || !values.bin || !values.db || !values.fixture) {
    console.error("usage: CLIENT stdio|stateless|stateful --modules NM --bin B --db DB --fixture DIR [--agent A] [--url URL --token T]");
    process.exit(2);
  }
  return { ...values, transport, serverArgs: serverArgs(values) };
}

/** `skillbase mcp` as the stdio clients spawn it. */
function serverArgs(a) {
  return [
    "--db", a.db,
    "--seed", join(a.fixture, "skills"),
    "--config", join(a.fixture, "skillbase.toml"),
    "mcp", "--agent", a.agent ?? "",
  ];
}

// --- what the fixture says the server must serve ---------------------------------------------
function fixture(root) {
  return {
    skills: readdirSync(join(root, "skills"))
      .filter((d) => existsSync(join(root, "skills", d, "SKILL.md")))
      .sort(),
    dir(skill) {
      return skill === LATE ? join(root, "late", LATE) : join(root, "skills", skill);
    },
    bytes(skill, rel) {
      return readFileSync(join(this.dir(skill), rel));
    },
    text(skill, rel) {
      return this.bytes(skill, rel).toString("utf8");
    },
    files(skill) {
      const base = this.dir(skill);
      const out = [];
      const walk = (d) => {
        for (const e of readdirSync(d)) {
          const p = join(d, e);
          if (statSync(p).isDirectory()) walk(p);
          else out.push(relative(base, p));
        }
      };
      walk(base);
      return out.sort();
    },
    /** SKILL.md after its frontmatter, as `load_skill` shows it. */
    body(skill) {
      const parts = this.text(skill, "SKILL.md").split("---\n");
      return parts.length >= 3 ? parts.slice(2).join("---\n").trim() : this.text(skill, "SKILL.md").trim();
    },
    digest(skill, rel) {
      return "sha256:" + createHash("sha256").update(this.bytes(skill, rel)).digest("hex");
    },
  };
}

// --- a tiny check recorder -------------------------------------------------------------------
let failed = 0;
const short = (v) => {
  let s;
  try {
    s = typeof v === "string" ? v : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  return s && s.length > 600 ? s.slice(0, 600) + "…" : s;
};
function ok(name, cond, detail = "") {
  if (cond) console.log(`  PASS ${name}`);
  else {
    failed++;
    console.log(`  FAIL ${name}: ${short(detail)}`);
  }
  return cond;
}
async function step(name, f) {
  try {
    await f();
  } catch (e) {
    failed++;
    console.log(`  FAIL ${name}: threw ${e?.name ?? "error"}: ${e?.message ?? e}`);
    console.error(e);
  }
}

/**
 * The JSON-RPC error code an SDK error carries. On the 2026-07-28 HTTP wire an unknown method is
 * HTTP 404 with a `-32601` body (as that revision's transport requires); SDK 2.x reports that as
 * an `SdkHttpError` with the status and the body's text, so the code is read from the body.
 */
function rpcCode(e) {
  if (typeof e?.code === "number") return e.code;
  try {
    return JSON.parse(e?.data?.text ?? "null")?.error?.code;
  } catch {
    return undefined;
  }
}

const textOf = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const loadEnum = (tools) => tools.tools.find((t) => t.name === "load_skill")?.inputSchema?.properties?.name?.enum;
const sameList = (a, b) => JSON.stringify([...(a ?? [])].sort()) === JSON.stringify([...b].sort());

/** Change notifications as they arrive, and a bounded wait for some of them. */
export class Notes {
  seen = new Map();
  untagged = [];
  #waiters = [];
  /** A notification as the SDK's handler got it. */
  note(n) {
    const method = n.method;
    if (n.params?._meta?.[SUBSCRIPTION_ID] === undefined) this.untagged.push(method);
    if (!this.seen.has(method)) this.seen.set(method, Date.now());
    for (const w of this.#waiters.splice(0)) w();
  }
  async waitFor(methods, ms) {
    const deadline = Date.now() + ms;
    while (!methods.every((m) => this.seen.has(m)) && Date.now() < deadline) {
      await new Promise((resolve) => {
        const t = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}

/**
 * Run the scenario. `sdk` gives:
 * - `label`, `client` (listTools, callTool, readResource, listResources as in both SDKs),
 *   `notes` (a `Notes` the client's notification handlers feed),
 * - `connect()`, `version()` (the negotiated protocol version), `sessionId()` (HTTP),
 * - `skills`: `list()`, `get(uri)`, `readDirectory(uri)` as raw results, and optionally
 *   `verifiedRead(entry, ref)` (a client-side digest-checked read),
 * - optionally `raw(method, params)`: a request the SDK does not check before sending,
 * - `subscribe()` (2026-07-28: open `subscriptions/listen`, resolve to the honoured filter),
 * - `close()`.
 */
export async function run(a, sdk) {
  const fx = fixture(a.fixture);
  const { client, notes } = sdk;
  const remote = a.transport !== "stdio";
  const overall = setTimeout(() => {
    console.log(`  FAIL run: did not finish within ${RUN_LIMIT_MS / 1000} s`);
    process.exit(1);
  }, RUN_LIMIT_MS);
  overall.unref();

  try {
    await sdk.connect();
  } catch (e) {
    ok("connect", false, e?.stack ?? String(e));
    process.exit(1);
  }
  const version = sdk.version();
  const modern = version === "2026-07-28";

  const skill = "release-checklist";
  const rel = "references/steps.md";
  const fileUri = `skill://${skill}/${rel}`;

  await step("initialize", async () => {
    const want = { stateless: "2026-07-28", stateful: "2025-11-25" }[a.transport] ?? sdk.stdioVersion;
    ok(`initialize: protocol version ${want}`, version === want, version);
    if (a.transport === "stateful") {
      const id = sdk.sessionId();
      ok("initialize: an Mcp-Session-Id (stateful wire)", typeof id === "string" && id.length > 0, id);
    }
    const info = client.getServerVersion();
    ok("initialize: serverInfo names skillbase", info?.name === "skillbase", info);
    const caps = client.getServerCapabilities();
    ok("initialize: tools and resources with listChanged", caps?.tools?.listChanged === true && caps?.resources?.listChanged === true, caps);
    ok(`initialize: the ${SKILLS_EXT} extension`, caps?.extensions?.[SKILLS_EXT] !== undefined, caps);
  });

  await step("tools/list", async () => {
    const tools = await client.listTools();
    const names = tools.tools.map((t) => t.name);
    const en = loadEnum(tools);
    ok("tools/list: load_skill's name is the closed enum of the fixture's skills", sameList(en, fx.skills), { enum: en, wanted: fx.skills });
    ok("tools/list: web_fetch (not granted) is not offered", !names.includes("web_fetch"), names);
    const ls = tools.tools.find((t) => t.name === "load_skill");
    ok("tools/list: load_skill requires name", ls?.inputSchema?.required?.includes("name") === true, ls);
  });

  await step("load_skill", async () => {
    const r = await client.callTool({ name: "load_skill", arguments: { name: skill } });
    const t = textOf(r);
    ok("load_skill: not an error", r.isError !== true, t);
    ok("load_skill: the skill's body", t.includes(fx.body(skill)), t);
    if (remote) {
      const want = `<file uri="${fileUri}" digest="${fx.digest(skill, rel)}">${rel}</file>`;
      ok("load_skill: the file named by skill:// URI and digest", t.includes(want), t.slice(-400));
    } else {
      ok("load_skill: the file named", t.includes(rel), t.slice(-400));
      const m = /^Skill directory: (.+)$/m.exec(t);
      ok(
        "load_skill: the skill directory given over stdio is one the client can open",
        m !== null && existsSync(join(m[1], rel)),
        m ? m[1] : "no 'Skill directory:' line",
      );
    }
  });

  await step("refusal", async () => {
    let r = await client.callTool({ name: "load_skill", arguments: { name: "no-such-skill" } });
    let t = textOf(r);
    ok("refusal: load_skill of an unknown name is isError with a reason", r.isError === true && REFUSAL.test(t), { isError: r.isError, t });
    r = await client.callTool({ name: "web_fetch", arguments: { url: "https://example.com/" } });
    t = textOf(r);
    ok("refusal: a tool the agent is not granted is isError with a reason", r.isError === true && REFUSAL.test(t), { isError: r.isError, t });
  });

  await step("resources/read", async () => {
    let rr = await client.readResource({ uri: fileUri });
    let c = rr.contents?.[0];
    ok("resources/read: a skill's file, exact text", c?.uri === fileUri && c?.text === fx.text(skill, rel), c);
    ok("resources/read: text/markdown", c?.mimeType === "text/markdown", c?.mimeType);
    rr = await client.readResource({ uri: `skill://${skill}/SKILL.md` });
    c = rr.contents?.[0];
    ok("resources/read: SKILL.md, exact bytes", c?.text === fx.text(skill, "SKILL.md"), c);
    try {
      await client.readResource({ uri: "skill://no-such-skill/SKILL.md" });
      ok("resources/read: an unknown skill is -32602", false, "answered a result");
    } catch (e) {
      ok("resources/read: an unknown skill is -32602", e?.code === -32602, `code ${e?.code}: ${e?.message}`);
    }
    if (sdk.raw) {
      try {
        await sdk.raw("resources/read", { url: fileUri });
        ok("resources/read without uri (bad params) is -32602", false, "answered a result");
      } catch (e) {
        ok("resources/read without uri (bad params) is -32602", rpcCode(e) === -32602, `code ${e?.code}: ${e?.message}`);
      }
      try {
        await sdk.raw("skills/nonexistent", {});
        ok("an unknown method is -32601", false, "answered a result");
      } catch (e) {
        ok("an unknown method is -32601", rpcCode(e) === -32601, `code ${e?.code}: ${e?.message}`);
        if (modern && remote && e?.data?.status !== undefined) {
          ok("an unknown method on the 2026-07-28 HTTP wire is HTTP 404", e.data.status === 404, e.data);
        }
      }
    }
    const lr = await client.listResources();
    ok(
      "resources/list: each skill's SKILL.md",
      sameList(lr.resources.map((x) => x.uri), fx.skills.map((s) => `skill://${s}/SKILL.md`)),
      lr.resources.map((x) => x.uri),
    );
  });

  await step("skills extension", async () => {
    const sl = await sdk.skills.list();
    const byName = Object.fromEntries((sl.skills ?? []).map((s) => [s.frontmatter?.name, s]));
    ok("skills/list: the fixture's skills", sameList(Object.keys(byName), fx.skills), Object.keys(byName));
    const entry = byName[skill];
    const got = Object.fromEntries((entry?.resources ?? []).map((x) => [x.uri, [x.digest, x.size]]));
    const want = Object.fromEntries(fx.files(skill).map((f) => [`skill://${skill}/${f}`, [fx.digest(skill, f), fx.bytes(skill, f).length]]));
    const norm = (o) => JSON.stringify(Object.keys(o).sort().map((k) => [k, o[k]]));
    ok("skills/list: every file with its SHA-256 digest and size", norm(got) === norm(want), { got, want });
    const g = await sdk.skills.get(`skill://${skill}/SKILL.md`);
    const fm = g.skill?.frontmatter ?? {};
    ok("skills/get: the skill's frontmatter", fm.name === skill && String(fm.description).includes("release"), g);
    let d = await sdk.skills.readDirectory(`skill://${skill}`);
    const kids = (d.resources ?? []).map((x) => `${x.uri} ${x.mimeType}`).sort();
    ok(
      "resources/directory/read: the skill's root",
      sameList(kids, [`skill://${skill}/SKILL.md text/markdown`, `skill://${skill}/references inode/directory`]),
      kids,
    );
    d = await sdk.skills.readDirectory(`skill://${skill}/references`);
    ok("resources/directory/read: a folder", sameList((d.resources ?? []).map((x) => x.uri), [fileUri]), d);
    if (sdk.skills.verifiedRead && entry) {
      const f = await sdk.skills.verifiedRead(entry, rel);
      ok("SkillsClient.read: the file, verified against its digest", f.verified === true && f.text === fx.text(skill, rel), f);
      const md = await sdk.skills.verifiedRead(entry);
      ok(
        "SkillsClient.read: SKILL.md, verified, frontmatter equal to the entry's",
        md.verified === true && md.frontmatter?.name === skill && md.body?.trim() === fx.body(skill),
        md,
      );
    }
  });

  await step("list_changed after another process's write", async () => {
    if (modern) {
      // 2026-07-28: change notifications ride a subscriptions/listen stream.
      const honored = await sdk.subscribe();
      ok(
        "subscriptions/listen: both list_changed honoured",
        honored?.toolsListChanged === true && honored?.resourcesListChanged === true,
        honored,
      );
    }
    const started = Date.now();
    const p = spawnSync(a.bin, ["--db", a.db, "put", fx.dir(LATE), "-m", "written by another process"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    ok("skillbase put (another process)", p.status === 0, (p.stderr || p.stdout || String(p.error)).trim());
    const methods = [TOOLS_CHANGED, RESOURCES_CHANGED];
    await notes.waitFor(methods, NOTIFY_WAIT_MS - (Date.now() - started));
    for (const m of methods) {
      ok(`${m} within ${NOTIFY_WAIT_MS / 1000} s`, notes.seen.has(m), `not received after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    if (modern) {
      await new Promise((r) => setTimeout(r, 300)); // let any stray notification of the same change arrive
      const name = "2026-07-28: every list_changed rides the subscriptions/listen stream (carries its subscriptionId)";
      ok(name, notes.untagged.length === 0, { untagged: notes.untagged });
    }
    const tools = await client.listTools();
    const en = loadEnum(tools);
    ok("tools/list after the write: the enum holds the new skill", sameList(en, [...fx.skills, LATE]), { enum: en });
    const r = await client.callTool({ name: "load_skill", arguments: { name: LATE } });
    const t = textOf(r);
    ok("load_skill of the new skill: its body", r.isError !== true && t.includes(fx.body(LATE)), { isError: r.isError, t });
    const sl = await sdk.skills.list();
    ok("skills/list after the write: the new skill", (sl.skills ?? []).some((s) => s.frontmatter?.name === LATE), sl);
  });

  try {
    await sdk.close();
  } catch (e) {
    ok("close", false, e?.message ?? String(e));
  }
  clearTimeout(overall);
  process.exit(failed ? 1 : 0);
}
