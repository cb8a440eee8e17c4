import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type LocalServer, startServer } from '../unit/net/helpers.js';
import { withEgressComputer } from './egress-fixture.js';
import { buildGitRepo, buildNpmRegistry, buildWheelIndex, serveDirectory } from './egress-packages.js';

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

describe('package managers and git through the egress proxy (real bwrap)', { concurrency: false }, () => {
  let root: string;
  let server: Awaited<ReturnType<typeof serveDirectory>>;
  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'paddock-egress-pkgs-'));
    buildWheelIndex(root);
    buildNpmRegistry(root, 'npm.test');
    buildGitRepo(root);
    server = await serveDirectory(root);
  });
  after(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });

  const policy = () => ({
    http: {
      allow: [`pypi.test:${server.port}`, `npm.test:${server.port}`, `git.test:${server.port}`],
      hosts: { 'pypi.test': '127.0.0.1', 'npm.test': '127.0.0.1', 'git.test': '127.0.0.1' },
    },
  });

  it('pip installs a real wheel from a local package index, npm a real tarball from a local registry, git clones over http', async () => {
    await withEgressComputer({ policy: policy() }, async ({ run, rows }) => {
      const pip = await run(
        `python3 -m pip install --disable-pip-version-check --no-cache-dir --target /workspace/pylib --index-url http://pypi.test:${server.port}/simple/ --trusted-host pypi.test egress-probe && PYTHONPATH=/workspace/pylib python3 -c "import egress_probe; print(egress_probe.MARKER)"`,
        120_000,
      );
      assert.equal(pip.exitCode, 0, pip.stdout + pip.stderr);
      assert.match(pip.stdout, /wheel-through-the-proxy/);
      const npm = await run(
        `mkdir -p /workspace/proj && cd /workspace/proj && echo {} > package.json && npm install --no-update-notifier --no-audit --no-fund --registry http://npm.test:${server.port}/ egress-probe || { tail -30 /workspace/.npm/_logs/*.log; exit 1; }; node -e "console.log(require('egress-probe'))"`,
        120_000,
      );
      assert.equal(npm.exitCode, 0, npm.stdout + npm.stderr);
      assert.match(npm.stdout, /tarball-through-the-proxy/);
      const git = await run(
        `git clone -q http://git.test:${server.port}/repo.git /workspace/repo && cat /workspace/repo/README`,
        120_000,
      );
      assert.equal(git.exitCode, 0, git.stdout + git.stderr);
      assert.match(git.stdout, /cloned-through-the-proxy/);
      for (const job of [pip, npm, git]) {
        const mine = rows().filter((r) => r.jobId === job.jobId);
        assert.ok(mine.length > 0 && mine.every((r) => r.success), `rows of ${job.jobId}`);
      }
    });
  });
});
