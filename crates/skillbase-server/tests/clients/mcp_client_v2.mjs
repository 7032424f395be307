// Drive `skillbase` with the official MCP TypeScript SDK 2.x client (`@modelcontextprotocol/client`,
// pinned in .ci/clients), run with the scenario in scenario.mjs:
//
//   node mcp_client_v2.mjs stdio     --modules NM --bin B --db DB --fixture DIR --agent A
//   node mcp_client_v2.mjs stateless --modules NM --bin B --db DB --fixture DIR --url URL --token T
//   node mcp_client_v2.mjs stateful  --modules NM --bin B --db DB --fixture DIR --url URL --token T
//
// NM is the node_modules folder the SDK is installed in (the cache, not this repository). The
// 2.x client's default is the 2025-11-25 handshake (`versionNegotiation` 'legacy'): that is the
// `stateful` run. `stdio` and `stateless` use its `'auto'` negotiation (probe `server/discover`,
// speak 2026-07-28; change notifications through `subscriptions/listen`). The Skills extension
// methods go through the SDK's own `SkillsClient`, which checks every file it reads against the
// entry's size and SHA-256 digest.

import { openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Notes, cli, run } from "./scenario.mjs";

const a = cli();
const pkg = join(a.modules, "@modelcontextprotocol/client");
const load = (p) => import(pathToFileURL(join(pkg, "dist", p)).href);
const { Client, StreamableHTTPClientTransport } = await load("index.mjs");
const { StdioClientTransport } = await load("stdio.mjs");
const { SkillsClient } = await load("ext/skills/index.mjs");
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;

const notes = new Notes();
const mode = a.transport === "stateful" ? "legacy" : "auto";
const client = new Client({ name: "skillbase-ci-typescript-client", version }, { versionNegotiation: { mode } });
client.setNotificationHandler("notifications/tools/list_changed", (n) => notes.note(n));
client.setNotificationHandler("notifications/resources/list_changed", (n) => notes.note(n));

const wire =
  a.transport === "stdio"
    ? new StdioClientTransport({
        command: a.bin,
        args: a.serverArgs,
        env: { ...process.env },
        stderr: a["server-log"] ? openSync(a["server-log"], "a") : "inherit",
      })
    : new StreamableHTTPClientTransport(new URL(a.url), {
        requestInit: { headers: { Authorization: `Bearer ${a.token}` } },
      });

const skills = new SkillsClient(client);
// Any result, as a Standard Schema: for requests this test sends as they are (bad params, an
// unknown method), past the SDK's typed methods.
const anyResult = { "~standard": { version: 1, vendor: "skillbase-ci", validate: (value) => ({ value }) } };
const raw = (method, params) => client.request({ method, params }, anyResult);
let subscription;

await run(a, {
  client,
  notes,
  stdioVersion: "2026-07-28",
  connect: () => client.connect(wire),
  version: () => client.getNegotiatedProtocolVersion(),
  sessionId: () => wire.sessionId,
  raw,
  skills: {
    list: () => skills.list(),
    get: (uri) => skills.get(uri),
    readDirectory: (uri) => skills.readDirectory(uri),
    verifiedRead: (entry, ref) => skills.read(entry, ref),
  },
  subscribe: async () => {
    subscription = await client.listen({ toolsListChanged: true, resourcesListChanged: true });
    return subscription.honoredFilter;
  },
  close: async () => {
    await subscription?.close();
    if (a.transport === "stateful") await wire.terminateSession();
    await client.close();
  },
});
