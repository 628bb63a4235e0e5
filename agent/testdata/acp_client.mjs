// An ACP client built on @agentclientprotocol/sdk (a peer this project did
// not write). Usage: node acp_client.mjs <agent> <config-json>
// config: {cwd, mcpServers, prompts: [text...], cancelOnToolCall?: bool}
// With cancelOnToolCall the client sends session/cancel as soon as the
// first tool_call update of a turn arrives.
// Prints one JSON object: {init, sessionId, turns: [{stopReason, updates}]}.
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const [agentPath, configJSON] = process.argv.slice(2);
const config = JSON.parse(configJSON);
const child = spawn(agentPath, [], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
let updates = [];
let peer = null;
let cancelled = false;
const app = acp.client({ name: "buzzbox-test-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
    check("SessionNotification", params);
    if (config.cancelOnToolCall && !cancelled && params.update.sessionUpdate === "tool_call" && peer) {
      cancelled = true;
      peer.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) =>
    ({ outcome: { outcome: "selected", optionId: params.options[0].optionId } }));
const out = { turns: [], schemaErrors: [] };
// With config.schema (the SDK's schema/v1/schema.json), every response and
// update the agent sends is validated against the ACP JSON Schema.
let check = () => {};
if (config.schema) {
  const schema = JSON.parse(readFileSync(config.schema, "utf8"));
  const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
  ajv.addSchema(schema, "acp");
  check = (def, value) => {
    const validate = ajv.getSchema(`acp#/$defs/${def}`);
    if (!validate) { out.schemaErrors.push(`no schema for ${def}`); return; }
    if (!validate(value)) out.schemaErrors.push({ def, value, errors: validate.errors });
  };
}
await app.connectWith(stream, async (agent) => {
  peer = agent;
  out.init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  check("InitializeResponse", out.init);
  const ses = await agent.request(acp.methods.agent.session.new, { cwd: config.cwd, mcpServers: config.mcpServers });
  check("NewSessionResponse", ses);
  out.sessionId = ses.sessionId;
  for (const text of config.prompts) {
    updates = [];
    const res = await agent.request(acp.methods.agent.session.prompt, { sessionId: ses.sessionId, prompt: [{ type: "text", text }] });
    check("PromptResponse", res);
    out.turns.push({ stopReason: res.stopReason, updates });
  }
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
process.stdout.write(JSON.stringify(out) + "\n");
