// An MCP client built on the official TypeScript SDK, run against the
// buzz-dev-mcp binary by TestNodeSDKClient.
// usage: node sdk-client.mjs <node_modules> <server-binary> <workdir>
// Prints one JSON object with what the client saw.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [nm, server, workdir] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(join(nm, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const client = new Client({ name: "sdk-smoke", version: "0.0.1" });
await client.connect(new StdioClientTransport({ command: server, args: [], cwd: workdir, stderr: "ignore" }));
const out = {
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  instructions: client.getInstructions(),
};
const { tools } = await client.listTools();
out.tools = tools.map((t) => t.name);
out.annotations = Object.fromEntries(tools.map((t) => [t.name, t.annotations ?? null]));
out.read = await client.callTool({ name: "read_file", arguments: { path: "hello.txt" } });
out.edit = await client.callTool({ name: "str_replace", arguments: { path: "hello.txt", old_str: "world", new_str: "there" } });
out.reread = await client.callTool({ name: "read_file", arguments: { path: "hello.txt" } });
// shell declares an outputSchema: the SDK validates structuredContent against it.
out.shell = await client.callTool({ name: "shell", arguments: { command: "echo from-shell; exit 4" } });
out.missing = await client.callTool({ name: "read_file", arguments: { path: "nope.txt" } });
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
  out.unknown = "no error";
} catch (e) {
  out.unknown = String(e.code ?? e.message);
}
await client.close();
console.log(JSON.stringify(out));
