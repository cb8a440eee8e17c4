import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { policySchema } from '../../../src/config/schema.js';
import { McpHttpEndpoint } from '../../../src/mcp/http.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/audit-store.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { Gateway } from '../../../src/tools/gateway.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { InputValidator } from '../../../src/tools/validation.js';

/** Sends `head` and part of a body on a raw socket and returns all the server writes back. */
function slowPost(port: number, head: string, part: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head + part));
    let answer = '';
    socket.on('data', (d) => {
      answer += d.toString();
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('Streamable HTTP bounds', () => {
  it('answers a POST body that never ends with a JSON-RPC error and closes only that connection', {
    timeout: 30_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-http-bounds-'));
    const db = openDatabase(join(dir, 'paddock.db'));
    const logger = silentLogger();
    const registry = new ToolRegistry();
    const gateway = new Gateway({
      registry,
      audit: new SqliteAuditStore(db),
      policy: createWhitelistSandbox(policySchema.parse({})),
      permissions: new PermissionPolicy([]),
      validator: new InputValidator(),
      logger,
    });
    const mcp = new McpHttpEndpoint({ gateway, registry, version: 'test' }, logger, { bodyTimeoutMs: 300 });
    const server = createServer((req, res) => void mcp.handle(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      const answer = await slowPost(
        port,
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n`,
        '{"jsonrpc":"2.0",',
      );
      assert.match(answer, /^HTTP\/1\.1 408/);
      const body = JSON.parse(/\{.*\}/s.exec(answer)?.[0] ?? '{}') as { error: { message: string } };
      assert.match(body.error.message, /did not arrive within 300 ms/);
      // the server still answers a whole request
      const ok = await fetch(`http://127.0.0.1:${port}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 't', version: '1' },
          },
        }),
      });
      assert.equal(ok.status, 200);
      await ok.body?.cancel();
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await mcp.close?.();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
