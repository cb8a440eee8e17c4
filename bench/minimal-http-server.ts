/**
 * The MCP SDK's own minimal Streamable HTTP server: one McpServer per session with one no-op
 * tool, sessions kept in a Map, bodies parsed as JSON, on node:http. The peer of Paddock's
 * HTTP throughput in bench/http-load.ts; prints its URL on stdout once listening.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { isInitializeRequest, McpServer } from '@modelcontextprotocol/server';

const transports = new Map<string, NodeStreamableHTTPServerTransport>();

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
}

function newSession(): NodeStreamableHTTPServerTransport {
  const server = new McpServer({ name: 'minimal-http', version: '1.0.0' });
  server.registerTool('noop', { description: 'Does nothing.' }, async () => ({
    content: [{ type: 'text', text: 'ok' }],
  }));
  const transport = new NodeStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => {
      transports.set(id, transport);
    },
  });
  transport.onclose = () => {
    if (transport.sessionId) transports.delete(transport.sessionId);
  };
  void server.connect(transport);
  return transport;
}

const http = createServer(async (req, res) => {
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  const id = req.headers['mcp-session-id'];
  const existing = typeof id === 'string' ? transports.get(id) : undefined;
  if (existing) return existing.handleRequest(req, res, body);
  if (req.method === 'POST' && isInitializeRequest(body)) return newSession().handleRequest(req, res, body);
  res.writeHead(400).end();
});
http.listen(0, '127.0.0.1', () => {
  const address = http.address();
  if (address && typeof address === 'object') process.stdout.write(`http://127.0.0.1:${address.port}\n`);
});
