import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { withEgressComputer } from './egress-fixture.js';

const SECRET = 'sekrit-token-9f3a1c77e0';

/** An https server on 127.0.0.1 for `names`, with a certificate of a CA this test makes. */
async function startHttpsStub(dir: string, names: string[]) {
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Upstream test CA',
  ]);
  openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'srv.key',
    '-out',
    'srv.csr',
    '-subj',
    `/CN=${names[0]}`,
  ]);
  writeFileSync(join(dir, 'srv.ext'), `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    'srv.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'srv.pem',
    '-days',
    '2',
    '-extfile',
    'srv.ext',
  ]);
  const seen: { host: string | undefined; authorization: string | undefined }[] = [];
  const server: Server = createServer(
    { key: readFileSync(join(dir, 'srv.key')), cert: readFileSync(join(dir, 'srv.pem')) },
    (req, res) => {
      seen.push({ host: req.headers.host, authorization: req.headers.authorization });
      res.end(`upstream saw authorization=${req.headers.authorization ? 'present' : 'absent'}\n`);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    ca: readFileSync(join(dir, 'ca.pem'), 'utf8'),
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('credential injection with TLS terminated for one domain (real bwrap)', {
  concurrency: false,
}, () => {
  let dir: string;
  let stub: Awaited<ReturnType<typeof startHttpsStub>>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-inject-'));
    stub = await startHttpsStub(dir, ['api.test', 'plain.test']);
  });
  after(async () => {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds the header on https for the named domain, tunnels other domains untouched, and the computer never sees the secret', async () => {
    const policy = {
      http: {
        allow: [`api.test:${stub.port}`, `plain.test:${stub.port}`],
        hosts: { 'api.test': '127.0.0.1', 'plain.test': '127.0.0.1' },
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${VAR} syntax of inject rules
        inject: [{ domain: 'api.test', headers: { Authorization: 'Bearer ${TEST_API_TOKEN}' } }],
      },
    };
    await withEgressComputer(
      { policy, env: { TEST_API_TOKEN: SECRET }, upstreamCa: [stub.ca] },
      async ({ run, rows, dataDir }) => {
        const caKey = readFileSync(join(dataDir, 'egress-ca', 'ca.key'), 'utf8');
        const keyLine = caKey.split('\n')[1]!;
        assert.ok(keyLine.length > 20);
        const r = await run(
          [
            `curl -sS -v https://api.test:${stub.port}/v1 2>/workspace/curl-verbose.txt`,
            `python3 -c "import urllib.request; print('py ' + urllib.request.urlopen('https://api.test:${stub.port}/py', timeout=20).read().decode().strip())"`,
            `grep -i 'issuer' /workspace/curl-verbose.txt | sed 's/^/terminated-/'`,
            // plain.test has no inject rule: its TLS is the upstream's own (a CA the computer does not trust)
            `curl -sS -k -v https://plain.test:${stub.port}/ 2>&1 | grep -i 'issuer' | sed 's/^/tunnelled-/'`,
            `curl -sS https://plain.test:${stub.port}/ >/dev/null 2>&1; echo "untrusted=$?"`,
            `echo "env-hits=$(env | grep -c '${SECRET}')"`,
            `echo "file-hits=$(grep -rl '${SECRET}' /workspace /tmp /etc /opt 2>/dev/null | wc -l)"`,
            `echo "ca-keys=$(grep -rlF '${keyLine}' /etc /opt /workspace /tmp /var /home /root /run 2>/dev/null | wc -l)"`,
          ].join('; '),
        );
        assert.equal(r.exitCode, 0, r.stderr);
        assert.match(r.stdout, /upstream saw authorization=present/);
        assert.match(r.stdout, /py upstream saw authorization=present/);
        assert.match(r.stdout, /terminated-.*issuer: CN=Paddock egress CA/);
        assert.match(r.stdout, /tunnelled-.*issuer: CN=Upstream test CA/);
        assert.match(r.stdout, /untrusted=60/);
        assert.match(r.stdout, /env-hits=0/);
        assert.match(r.stdout, /file-hits=0/);
        assert.match(r.stdout, /ca-keys=0/);
        assert.doesNotMatch(r.stdout + r.stderr, new RegExp(SECRET));
        const api = stub.seen.filter((s) => s.host?.startsWith('api.test'));
        assert.equal(api.length, 2);
        assert.ok(api.every((s) => s.authorization === `Bearer ${SECRET}`));
        assert.ok(
          stub.seen
            .filter((s) => s.host?.startsWith('plain.test'))
            .every((s) => s.authorization === undefined),
        );
        const mine = rows().filter((row) => row.jobId === r.jobId);
        assert.ok(mine.some((row) => JSON.parse(row.input).kind === 'https-terminated'));
        assert.ok(mine.every((row) => !row.input.includes(SECRET)));
      },
    );
  });
});
