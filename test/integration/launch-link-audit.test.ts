import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase } from '../../src/audit/database.js';
import { SqliteAuditStore } from '../../src/audit/sqlite-audit-store.js';
import type { StoredInvocation } from '../../src/audit/types.js';
import { connectHttp } from '../helpers/clients.js';
import { pollUntil, startServe, tempProject } from '../helpers/paddock-process.js';

function rows(dataDir: string): StoredInvocation[] {
  const db = openDatabase(join(dataDir, 'paddock.db'));
  try {
    return new SqliteAuditStore(db).query({ ascending: true, limit: 10_000 });
  } finally {
    db.close();
  }
}

describe('launch links through the gateway', () => {
  it('confirming a launch link on its page leaves an audit row of the launch with the link and the job it ran', async () => {
    const project = tempProject('computer:\n  autoLaunch: false\n');
    const serve = await startServe(project);
    try {
      const client = await connectHttp(serve.url, serve.token);
      const created = await client.callTool({
        name: 'create_launch_link',
        arguments: { profileId: 'shell', startupScript: 'echo link-script-ran' },
      });
      const linkId = (created.structuredContent as { id: string }).id;
      await client.close();

      const signIn = await fetch(await serve.loginLink(), { redirect: 'manual' });
      const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
      assert.ok(cookie, 'the login link sets a session cookie');
      const page = await (await fetch(`${serve.url}/launch/${linkId}`, { headers: { cookie } })).text();
      const nonce = /name="nonce" value="([^"]+)"/.exec(page)?.[1] ?? '';
      const confirmed = await fetch(`${serve.url}/launch/${linkId}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: serve.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ nonce }).toString(),
      });
      assert.equal(confirmed.status, 303);

      const row = (await pollUntil(
        () =>
          rows(project.dataDir).find(
            (r) => r.tool === 'launch_computer' && r.caller === 'dock:owner' && r.state === 'ended',
          ) ?? false,
        'the launch row of the confirmation',
        60_000,
      )) as StoredInvocation;
      assert.equal(row.success, true, row.errorMessage ?? '');
      assert.deepEqual(JSON.parse(row.input), { profileId: 'shell', launchLinkId: linkId });
      assert.match(row.jobId ?? '', /^g\d+\.job\d+$/, 'the row names the job of the startup script');
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });
});
