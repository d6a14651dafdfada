// The official MCP TypeScript SDK's client driving `sessionref mcp` over stdio, for tests/test_mcp.py:
// an MCP client nobody on this project wrote. Reads one JSON request on stdin:
//   {command, args, env, calls: [[name, arguments], ...]}
// and prints {tools: [...as listed], results: [{isError, text}, ...]} on stdout.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const transport = new StdioClientTransport({ command: request.command, args: request.args, env: request.env });
const client = new Client({ name: 'sessionref-interop', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
const results = [];
for (const [name, args] of request.calls) {
  const result = await client.callTool({ name, arguments: args });
  results.push({ isError: result.isError === true, text: result.content.map((block) => block.text).join('') });
}
await client.close();
process.stdout.write(JSON.stringify({ tools, results }));
