// Drive `skillbase` with the official MCP TypeScript SDK 1.x (`@modelcontextprotocol/sdk`, pinned
// in .ci/clients), run with the scenario in scenario.mjs:
//
//   node mcp_client.mjs stdio    --modules NM --bin B --db DB --fixture DIR --agent A
//   node mcp_client.mjs stateful --modules NM --bin B --db DB --fixture DIR --url URL --token T
//
// NM is the node_modules folder the SDK is installed in (the cache, not this repository).
// `stdio` spawns `B --db DB --seed DIR/skills --config DIR/skillbase.toml mcp --agent A`;
// `stateful` is this SDK's only way over streamable HTTP: the 2025-11-25 `initialize`
// handshake, an `Mcp-Session-Id`, change notifications on the GET stream. SDK 1.x speaks no
// protocol version after 2025-11-25, so `stateless` prints why and exits 3 (not applicable).

import { openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Notes, cli, run } from "./scenario.mjs";

const a = cli();
const pkg = join(a.modules, "@modelcontextprotocol/sdk");
const load = (p) => import(pathToFileURL(join(pkg, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const types = await load("types.js");
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;

if (a.transport === "stateless") {
  const speaks = types.SUPPORTED_PROTOCOL_VERSIONS;
  console.log(`  N/A stateless: @modelcontextprotocol/sdk ${version} speaks ${speaks.join(", ")}; not 2026-07-28`);
  process.exit(speaks.includes("2026-07-28") ? 1 : 3);
}

const notes = new Notes();
const client = new Client({ name: "skillbase-ci-typescript-sdk", version }, { capabilities: {} });
client.setNotificationHandler(types.ToolListChangedNotificationSchema, (n) => notes.note(n));
client.setNotificationHandler(types.ResourceListChangedNotificationSchema, (n) => notes.note(n));

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

// The version initialize settled on: the client hands it to the transport and keeps no copy.
let negotiated;
const setVersion = wire.setProtocolVersion?.bind(wire);
wire.setProtocolVersion = (v) => {
  negotiated = v;
  setVersion?.(v);
};

// SDK 1.x has no Skills extension client: its methods as plain requests.
const raw = (method, params) => client.request({ method, params }, types.ResultSchema);

await run(a, {
  client,
  notes,
  stdioVersion: "2025-11-25",
  connect: () => client.connect(wire),
  version: () => negotiated,
  sessionId: () => wire.sessionId,
  raw,
  skills: {
    list: () => raw("skills/list", {}),
    get: (uri) => raw("skills/get", { uri }),
    readDirectory: (uri) => raw("resources/directory/read", { uri }),
  },
  subscribe: async () => {
    throw new Error("SDK 1.x has no subscriptions/listen");
  },
  close: async () => {
    if (a.transport === "stateful") await wire.terminateSession();
    await client.close();
  },
});
