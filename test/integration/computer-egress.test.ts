import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type LocalServer, startServer } from '../unit/net/helpers.js';
import { withEgressComputer } from './egress-fixture.js';

describe('computer egress through the host proxy (real bwrap)', { concurrency: false }, () => {
  let stub: LocalServer;
  let forbidden: LocalServer;
  before(async () => {
    stub = await startServer((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://denied.test:${forbidden.port}/` });
        res.end();
        return;
      }
      res.end(`stub says hi to ${req.url}`);
    });
    forbidden = await startServer((_req, res) => res.end('should never be reached'));
  });
  after(async () => {
    await stub.close();
    await forbidden.close();
  });

  const policy = () => ({
    http: {
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1', 'denied.test': '127.0.0.1' },
    },
  });

  it('curl and Python urllib reach an allowed name with no flags, and each connection is a row linked to the job', async () => {
    await withEgressComputer({ policy: policy() }, async ({ run, rows }) => {
      const r = await run(
        `curl -sS --max-time 20 http://stub.test:${stub.port}/curl && echo && python3 -c "import urllib.request; print(urllib.request.urlopen('http://stub.test:${stub.port}/py', timeout=20).read().decode())"`,
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /stub says hi to \/curl/);
      assert.match(r.stdout, /stub says hi to \/py/);
      const mine = rows().filter((row) => row.jobId === r.jobId);
      assert.equal(mine.length, 2);
      for (const row of mine) {
        assert.equal(row.success, true);
        assert.equal(row.caller, 'mcp:egress-test');
        assert.equal(row.parentId, r.parentId);
        assert.equal(row.source, 'computer');
      }
    });
  });
});
