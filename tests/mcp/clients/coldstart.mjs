// Cold start (issue #39) with the official TypeScript SDK, `@modelcontextprotocol/sdk` 1.32 (pinned in
// package.json), over stdio as the SDK launches servers, with every timeout at the SDK's default.
//
// Why: a client that starts the daemon itself must not give up while the daemon compiles a Python and
// a JavaScript plugin for the first time (an empty compile cache: tens of seconds on two cores). What
// this SDK does by default, and so what is checked:
//
// - `StdioClientTransport` + `Client` with no options but `listChanged` (the SDK's own handler of
//   `notifications/tools/list_changed`, which re-lists by itself): every request times out after
//   DEFAULT_REQUEST_TIMEOUT_MSEC (60 s), initialize included. The handshake must end on the newest
//   protocol the SDK offers (LATEST_PROTOCOL_VERSION, 2025-11-25).
// - `tools/list`: answered at once (the daemon waits 3 s at most) with what is ready.
// - `tools/call` of csv_stats (Python) and json_query (JavaScript), which may still be compiling: the
//   daemon holds the call until the plugin serves (45 s at most, within the 60 s) and the results
//   must be right.
// - When the first list lacked them (the cold start really exercised: said in the output, not failed,
//   on a machine that compiled everything within the list wait), a list_changed notification arrived
//   and the SDK's re-list, and a later list, include them all.
//
// Prints the timings: initialize, first list, first Python call. Exits non-zero on the first unmet
// expectation, with the daemon's stderr.
//
//   node coldstart.mjs TOOLHOST_BIN WORKDIR

import { loadavg } from "node:os";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from "@modelcontextprotocol/sdk/shared/protocol.js";

const [binary, workdir] = process.argv.slice(2);
const NAME = "typescript 1.32";
const SLOW = ["csv_stats", "json_query"];
const start = performance.now();
const since = () => (performance.now() - start) / 1000;
let stderr = "";

function fail(message) {
  const log = stderr.replace(/\x1b\[[0-9;]*m/g, "").slice(-4000);
  console.error(`FAIL cold start, ${NAME}: ${message}\n--- the daemon's stderr, last lines ---\n${log}`);
  process.exit(1);
}
// The first text block (the daemon may add the structured result as JSON in a second one).
const text = (r) => r.content.find((b) => b.type === "text")?.text ?? "";

async function call(client, name, args) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (e) {
    fail(`tools/call ${name} failed at ${since().toFixed(1)} s: ${e} (load average ${loadavg()[0].toFixed(2)}; ` +
      "the daemon holds a call at most 45 s for its plugin to compile, the SDK waits 60 s)");
  }
}

const transport = new StdioClientTransport({
  command: binary,
  args: ["serve", "--stdio", "--no-watch"],
  cwd: workdir,
  stderr: "pipe",
});
transport.stderr.on("data", (chunk) => (stderr += chunk));
// The client tells an HTTP transport the negotiated version through this hook; stdio has none, so
// one is added to observe it.
let negotiated;
transport.setProtocolVersion = (v) => (negotiated = v);

const changes = [];
const client = new Client(
  { name: "coldstart-ts", version: "1" },
  { listChanged: { tools: { onChanged: (error, tools) => changes.push({ at: since(), error, tools }) } } },
);
client.onerror = (e) => fail(`the client reported: ${e}`);
try {
  await client.connect(transport);
} catch (e) {
  fail(`initialize failed at ${since().toFixed(1)} s: ${e}`);
}
const tInit = since();
if (negotiated !== LATEST_PROTOCOL_VERSION) {
  fail(`negotiated ${negotiated}, not the SDK's newest ${LATEST_PROTOCOL_VERSION}`);
}

const first = new Set((await client.listTools()).tools.map((t) => t.name));
const tList = since();
if (tList - tInit > 10) fail(`the first tools/list took ${(tList - tInit).toFixed(1)} s (the daemon waits 3 s at most)`);

let r = await call(client, "csv_stats", { path: "sales.csv" });
const tPy = since();
if (r.isError || !text(r).includes("3 rows") || !text(r).includes("units: 3 filled, numeric, min 2, max 5")) {
  fail(`csv_stats gave the wrong answer: ${JSON.stringify(r)}`);
}
const csv = r.structuredContent;
const units = csv?.columns?.find((c) => c.name === "units");
if (csv?.rows !== 3 || units?.sum !== 10) fail(`csv_stats gave the wrong structured result: ${JSON.stringify(csv)}`);

r = await call(client, "json_query", { path: "items.json", query: ".items[].name" });
const tJs = since();
if (r.isError || text(r).split(/\s+/).join(" ") !== '"bolt" "nut"') {
  fail(`json_query gave the wrong answer: ${JSON.stringify(r)}`);
}
if (JSON.stringify(r.structuredContent?.results) !== '["bolt","nut"]') {
  fail(`json_query gave the wrong structured result: ${JSON.stringify(r.structuredContent)}`);
}

const missing = SLOW.filter((t) => !first.has(t));
const hasAll = (names) => ["echo", ...SLOW].every((t) => names.has(t));
if (missing.length > 0) {
  // Both plugins serve now (their calls ran), so the change has been announced; the SDK re-lists on it.
  const deadline = Date.now() + 10000;
  while (!changes.some((c) => c.tools && hasAll(new Set(c.tools.map((t) => t.name))))) {
    if (Date.now() > deadline) {
      fail(`no list_changed re-list with every tool within 10 s of the calls, though the first list lacked ${missing}: ` +
        JSON.stringify(changes.map((c) => ({ at: c.at, error: String(c.error), tools: c.tools?.map((t) => t.name) }))));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const later = new Set((await client.listTools()).tools.map((t) => t.name));
if (!hasAll(later)) fail(`a later list lacks tools: ${[...later]}`);
await client.close();

console.log(`${NAME} stdio: protocol ${negotiated}, request timeout ${DEFAULT_REQUEST_TIMEOUT_MSEC / 1000} s; ` +
  `initialize ${tInit.toFixed(1)} s, first list ${tList.toFixed(1)} s (${first.size} tools: ${[...first].sort().join(", ")}), ` +
  `first Python call (csv_stats) ${tPy.toFixed(1)} s, JS call (json_query) ${tJs.toFixed(1)} s; ` +
  `list_changed at ${changes.map((c) => c.at.toFixed(1)).join(", ") || "none"} s; load average ${loadavg()[0].toFixed(2)}`);
if (missing.length > 0) {
  console.log(`${NAME}: cold start exercised (the first list lacked ${missing.join(", ")}, still compiling)`);
} else {
  console.log(`NOTE ${NAME}: the first list already had both big plugins: this machine compiled them within the list wait`);
}
