// Drives hookd with the official MCP TypeScript SDK client, as any MCP host
// built on it would, and checks every tool's schemas with Ajv (JSON Schema
// 2020-12). Run by cmd/hookd's TestMCPOfficialClient:
//
//   node client.mjs http URL KEY
//   node client.mjs stdio COMMAND ARG...
//
// It prints one line per check and exits 1 on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const [mode, ...rest] = process.argv.slice(2);

function fail(msg) {
  console.error(`FAIL ${msg}`);
  process.exit(1);
}

let transport;
if (mode === "http") {
  const [url, key] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
} else if (mode === "stdio") {
  const [command, ...args] = rest;
  transport = new StdioClientTransport({ command, args, stderr: "inherit" });
} else {
  fail(`usage: node client.mjs http URL KEY | stdio COMMAND ARG...`);
}

const client = new Client({ name: "hookd-official-client-test", version: "1.0.0" });
await client.connect(transport);
console.log(`ok connect ${client.getServerVersion()?.name}`);

// listTools parses every tool with the SDK's own schema: one schema it
// refuses fails the whole list.
const { tools } = await client.listTools();
if (tools.length === 0) fail("tools/list is empty");
console.log(`ok tools/list ${tools.length}`);

const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
for (const t of tools) {
  for (const [what, schema] of [["input", t.inputSchema], ["output", t.outputSchema]]) {
    if (schema === undefined) {
      if (what === "input") fail(`${t.name} has no input schema`);
      continue;
    }
    if (typeof schema !== "object" || schema.type !== "object") fail(`${t.name} ${what} schema is not an object schema`);
    try {
      ajv.compile(schema);
    } catch (e) {
      fail(`${t.name} ${what} schema does not compile: ${e.message}`);
    }
  }
}
console.log(`ok schemas ${tools.length}`);

const created = await client.callTool({
  name: "webhooks.create",
  arguments: { url: "http://127.0.0.1:9/official-client", event_types: ["invoice.*"] },
});
if (created.isError) fail(`webhooks.create: ${JSON.stringify(created.content)}`);
const ep = created.structuredContent;
if (!ep?.id?.startsWith("ep_") || !ep.secret) fail(`webhooks.create answered ${JSON.stringify(ep)}`);
console.log(`ok webhooks.create ${ep.id}`);

const bad = await client.callTool({ name: "webhooks.create", arguments: { url: "not a url", event_types: ["*"] } });
const text = bad.content?.[0]?.text ?? "";
if (!bad.isError || !text.includes('"code":"invalid"')) fail(`bad URL: ${JSON.stringify(bad)}`);
console.log(`ok tool error ${text}`);

const list = await client.callTool({ name: "webhooks.list", arguments: {} });
if (list.isError) fail(`webhooks.list: ${JSON.stringify(list.content)}`);
const ids = (list.structuredContent?.data ?? []).map((e) => e.id);
if (!ids.includes(ep.id)) fail(`webhooks.list lacks ${ep.id}: ${JSON.stringify(ids)}`);
console.log(`ok webhooks.list ${ids.length}`);

await client.close();
console.log("ok done");
