// An ACP client built on @agentclientprotocol/sdk (a peer this project did
// not write). Usage: node acp_client.mjs <agent> <config-json>
// config: {cwd, mcpServers, prompts: [text...], cancelOnToolCall?: bool}
// With cancelOnToolCall the client sends session/cancel as soon as the
// first tool_call update of a turn arrives.
// Prints one JSON object: {init, sessionId, turns: [{stopReason, updates}]}.
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

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
    if (config.cancelOnToolCall && !cancelled && params.update.sessionUpdate === "tool_call" && peer) {
      cancelled = true;
      peer.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) =>
    ({ outcome: { outcome: "selected", optionId: params.options[0].optionId } }));
const out = { turns: [] };
await app.connectWith(stream, async (agent) => {
  peer = agent;
  out.init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const ses = await agent.request(acp.methods.agent.session.new, { cwd: config.cwd, mcpServers: config.mcpServers });
  out.sessionId = ses.sessionId;
  for (const text of config.prompts) {
    updates = [];
    const res = await agent.request(acp.methods.agent.session.prompt, { sessionId: ses.sessionId, prompt: [{ type: "text", text }] });
    out.turns.push({ stopReason: res.stopReason, updates });
  }
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
process.stdout.write(JSON.stringify(out) + "\n");
