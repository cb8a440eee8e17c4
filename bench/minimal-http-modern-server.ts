/**
 * The MCP SDK's own minimal 2026-07-28 server: `createMcpHandler` (modern only) with one
 * McpServer per request and one no-op tool, mounted on node:http with the SDK's
 * `toNodeHandler`. The peer of Paddock's 2026-era figures in bench/eras.ts; prints its URL on
 * stdout once listening.
 */
import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';

const handler = createMcpHandler(
  () => {
    const server = new McpServer({ name: 'minimal-modern', version: '1.0.0' });
    server.registerTool('noop', { description: 'Does nothing.' }, async () => ({
      content: [{ type: 'text', text: 'ok' }],
    }));
    return server;
  },
  { legacy: 'reject' },
);
const serve = toNodeHandler(handler);
const http = createServer((req, res) => void serve(req, res));
http.listen(0, '127.0.0.1', () => {
  const address = http.address();
  if (address && typeof address === 'object') process.stdout.write(`http://127.0.0.1:${address.port}\n`);
});
