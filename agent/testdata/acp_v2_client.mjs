// An ACP v2 client: raw JSON-RPC over the agent's stdio, every answer and
// update checked against the v2 JSON Schema of @agentclientprotocol/sdk
// (a peer this project did not write). Usage:
//   node acp_v2_client.mjs <agent> <config-json>
// config: {cwd, schema, prompts: [text...]}
// Each prompt waits for the session's idle state_update.
// Prints one JSON object: {init, sessionId, turns: [{response, stop, updates}], close, schemaErrors}.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const [agentPath, configJSON] = process.argv.slice(2);
const config = JSON.parse(configJSON);
const schema = JSON.parse(readFileSync(config.schema, "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
ajv.addSchema(schema, "acp");
const out = { turns: [], schemaErrors: [] };
const check = (def, value) => {
  const validate = ajv.getSchema(`acp#/$defs/${def}`);
  if (!validate) { out.schemaErrors.push(`no schema for ${def}`); return; }
  if (!validate(value)) out.schemaErrors.push({ def, value, errors: validate.errors });
};
const child = spawn(agentPath, [], { stdio: ["pipe", "pipe", "inherit"] });
let nextId = 1;
const pending = new Map();
let updates = [];
let idle = null;
createInterface({ input: child.stdout }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.method === "session/update") {
    check("UpdateSessionNotification", msg.params);
    updates.push(msg.params.update);
    const u = msg.params.update;
    if (u.sessionUpdate === "state_update" && u.state === "idle" && idle) idle(u);
    return;
  }
  if (msg.method) {
    if (msg.id !== undefined) child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "not here" } }) + "\n");
    return;
  }
  const p = pending.get(msg.id);
  if (p) { pending.delete(msg.id); p(msg); }
});
const request = (method, params) => new Promise((resolve) => {
  const id = nextId++;
  pending.set(id, resolve);
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
});
const init = await request("initialize", { protocolVersion: 2, info: { name: "buzzbox-v2-test-client", version: "1" }, capabilities: {} });
out.init = init.result ?? init;
if (init.result) check("InitializeResponse", init.result);
const ses = await request("session/new", { cwd: config.cwd, mcpServers: [] });
if (ses.result) check("NewSessionResponse", ses.result);
out.sessionId = ses.result?.sessionId;
for (const text of config.prompts) {
  updates = [];
  const done = new Promise((resolve) => { idle = resolve; });
  const res = await request("session/prompt", { sessionId: out.sessionId, prompt: [{ type: "text", text }] });
  if (res.result) check("PromptResponse", res.result);
  const stop = res.error ? null : await done;
  out.turns.push({ response: res.result ?? res, stop, updates });
}
const closed = await request("session/close", { sessionId: out.sessionId });
if (closed.result) check("CloseSessionResponse", closed.result);
out.close = closed.result ?? closed;
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
process.stdout.write(JSON.stringify(out) + "\n");
