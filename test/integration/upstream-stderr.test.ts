import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixturePath } from '../fixtures/mcp/harness.js';
import { runCli, tempProject } from '../helpers/paddock-process.js';

const SECRET = 'sk-proj-Fixture0Secret0Value0123456789';

/** No escape, BEL or other control byte besides newline and tab. */
function assertInert(text: string, what: string): void {
  assert.doesNotMatch(text, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, `${what} holds a control character`);
  assert.ok(!text.includes(SECRET), `${what} holds the secret`);
}

describe('upstream stderr on the way to a terminal or a caller', () => {
  it('shows escape sequences of a server’s stderr as text and redacts secrets in servers logs and UPSTREAM_ERROR', async () => {
    const project = tempProject('');
    try {
      mkdirSync(join(project.dir, '.paddock'));
      writeFileSync(
        join(project.dir, '.paddock', 'mcp_servers.yaml'),
        [
          'mcpServers:',
          '  hostile:',
          `    command: ${JSON.stringify(process.execPath)}`,
          `    args: [${JSON.stringify(fixturePath('stdio-server'))}, "--mode", "hostile"]`,
          '    permissions:',
          '      "*": auto',
        ].join('\n'),
      );
      const logs = await runCli(project, ['servers', 'logs', 'hostile']);
      assert.equal(logs.code, 0, logs.stderr);
      assert.match(logs.stdout, /\\x1b\]52;c;/, 'the clipboard write is shown, not performed');
      assertInert(logs.stdout, 'servers logs');

      const crash = await runCli(project, ['servers', 'call', 'hostile_crash', '{}']);
      assert.notEqual(crash.code, 0);
      const said = crash.stdout + crash.stderr;
      assert.match(said, /UPSTREAM_ERROR|exited/);
      assertInert(said, 'the UPSTREAM_ERROR message');
    } finally {
      project.cleanup();
    }
  });
});
