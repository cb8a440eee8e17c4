import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadMcpServers } from '../../../src/integrations/load-config.js';
import { IntegrationsService } from '../../../src/integrations/service.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { PermissionPolicy } from '../../../src/tools/permissions.js';

describe("a server's permissions apply to its own tools only", () => {
  it('keeps "*": auto of server every away from the tools of server every_admin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-perm-scope-'));
    try {
      writeFileSync(
        join(dir, 'mcp_servers.yaml'),
        [
          'mcpServers:',
          '  every:',
          '    command: node',
          '    permissions:',
          '      "*": auto',
          '  every_admin:',
          '    command: node',
        ].join('\n'),
      );
      const { servers } = loadMcpServers(dir, {});
      const service = new IntegrationsService({ servers, logger: silentLogger() });
      try {
        const policy = new PermissionPolicy(service.permissionRules());
        assert.equal(policy.resolve({ name: 'every_echo', source: 'mcp:every' }).permission, 'auto');
        const admin = policy.resolve({ name: 'every_admin_delete_all', source: 'mcp:every_admin' });
        assert.equal(admin.permission, 'ask');
        assert.equal(admin.rule, 'default:upstream=ask');
        // a tool of every whose own name begins with admin_ keeps every's rule
        assert.equal(policy.resolve({ name: 'every_admin_x', source: 'mcp:every' }).permission, 'auto');
      } finally {
        await service.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
