import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { McpServerConfig } from '../../../src/integrations/load-config.js';
import { IntegrationsService } from '../../../src/integrations/service.js';
import { PaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';

const server = (name: string, extra: Partial<McpServerConfig> = {}): McpServerConfig =>
  ({
    name,
    prefix: name.toLowerCase().replace(/[^a-z0-9_]+/g, '_'),
    transport: 'stdio',
    command: '/nonexistent/never-started',
    args: [],
    env: {},
    enabled: true,
    timeoutMs: 1000,
    permissions: {},
    toolsets: [],
    startup: 'lazy',
    ...extra,
  }) as McpServerConfig;

describe('IntegrationsService without running servers', () => {
  test('a disabled server is listed as disabled, starts nothing and refuses calls', async () => {
    const service = new IntegrationsService({
      servers: [server('off', { enabled: false })],
      logger: silentLogger(),
    });
    try {
      await service.start();
      await service.discovered();
      assert.deepEqual(
        service.servers().map((s) => [s.name, s.state, s.pid, s.registeredTools]),
        [['off', 'disabled', null, 0]],
      );
      await assert.rejects(
        service.pool.callTool('off', 'x', {}),
        (e: unknown) =>
          e instanceof PaddockError && e.code === 'UPSTREAM_ERROR' && /is disabled/.test(e.message),
      );
    } finally {
      await service.close();
    }
  });

  test('a missing command is UPSTREAM_ERROR saying it was not found', async () => {
    const service = new IntegrationsService({ servers: [server('ghost')], logger: silentLogger() });
    try {
      await service.start();
      await service.discovered();
      assert.match(
        service.servers()[0]?.lastError ?? '',
        /command "\/nonexistent\/never-started" was not found/,
      );
    } finally {
      await service.close();
    }
  });

  test('an unknown server name is NOT_FOUND', async () => {
    const service = new IntegrationsService({ servers: [], logger: silentLogger() });
    assert.throws(
      () => service.logs('nope'),
      (e: unknown) => e instanceof PaddockError && e.code === 'NOT_FOUND',
    );
    await service.close();
  });

  test('per-server permissions become glob rules over full, sanitised tool names; disabled servers give none', () => {
    const service = new IntegrationsService({
      servers: [
        server('My-CRM', { permissions: { 'get-*': 'auto', delete_account: 'deny', '*': 'ask' } }),
        server('off', { enabled: false, permissions: { '*': 'auto' } }),
      ],
      logger: silentLogger(),
    });
    assert.deepEqual(
      service.permissionRules().map((r) => [r.pattern, r.permission, r.source, r.origin]),
      [
        ['my_crm_get_*', 'auto', 'mcp:My-CRM', 'mcp_servers.yaml#My-CRM'],
        ['my_crm_delete_account', 'deny', 'mcp:My-CRM', 'mcp_servers.yaml#My-CRM'],
        ['my_crm_*', 'ask', 'mcp:My-CRM', 'mcp_servers.yaml#My-CRM'],
      ],
    );
  });
});
