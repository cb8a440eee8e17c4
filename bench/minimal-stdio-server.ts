/**
 * The MCP SDK's own minimal stdio server (one McpServer, no tools): the peer that the bridge's
 * handshake is measured against in bench/bridge.ts.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

const server = new McpServer({ name: 'minimal', version: '1.0.0' });
await server.connect(new StdioServerTransport());
