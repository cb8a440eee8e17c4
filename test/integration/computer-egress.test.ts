import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildAgentSandbox } from '../../src/agents/policy-narrowing.js';
import { policySchema } from '../../src/config/schema.js';
import { OWNER } from '../../src/shared/principal.js';
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
  it('refuses what the issue lists, each with a clear message to the program and an audit row, and nothing reaches the target', async () => {
    await withEgressComputer({ policy: policy() }, async ({ run, rows, manager }) => {
      const before = forbidden.seen.length;
      const r = await run(
        [
          // a denied host (403 naming the rule and what to change)
          `curl -sS -o /dev/null -w 'denied=%{http_code}\n' http://denied.test:${forbidden.port}/`,
          `curl -sS http://denied.test:${forbidden.port}/ | head -1`,
          // IP literals in other notations go through the proxy and are refused there
          `curl -sS --noproxy '' -o /dev/null -w 'hex=%{http_code}\n' http://0x7f000001:${forbidden.port}/`,
          `curl -sS --noproxy '' -o /dev/null -w 'decimal=%{http_code}\n' http://2130706433:${forbidden.port}/`,
          `curl -sS --noproxy '' -o /dev/null -w 'literal=%{http_code}\n' http://127.0.0.1:${forbidden.port}/`,
          // a redirect to a denied host: the follow-up is a new, refused request
          `curl -sS -L -o /dev/null -w 'redirect=%{http_code}\n' http://stub.test:${stub.port}/redirect`,
          // CONNECT to a port no rule names
          `curl -sS https://stub.test:8443/ 2>&1 | tail -1 | sed 's/^/connect: /'`,
          // SOCKS with a raw address, and with a name
          `curl -sS --noproxy '' --proxy "socks5://$(echo "$ALL_PROXY" | sed 's#socks5h://##')" http://127.0.0.1:${stub.port}/ 2>&1 | tail -1 | sed 's/^/socks-raw: /'`,
          `curl -sS --proxy "$ALL_PROXY" http://stub.test:${stub.port}/socks | sed 's/^/socks-name: /'; echo`,
          // a malformed request line
          `python3 -c "import socket; s=socket.create_connection(('127.0.0.1', 3128)); s.sendall(b'NONSENSE\\r\\n\\r\\n'); print('malformed=' + s.recv(100).decode().split()[1])"`,
        ].join('; '),
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /denied=403/);
      assert.match(
        r.stdout,
        /Paddock egress refused denied\.test:\d+ \(rule default-deny\).*policy\.http\.allow/,
      );
      assert.match(r.stdout, /hex=403/);
      assert.match(r.stdout, /decimal=403/);
      assert.match(r.stdout, /literal=403/);
      assert.match(r.stdout, /redirect=403/);
      assert.match(r.stdout, /connect: .*403/);
      assert.match(r.stdout, /socks-raw: .*(not allowed|SOCKS|refused|denied)/i);
      assert.match(r.stdout, /socks-name: stub says hi to \/socks/);
      assert.match(r.stdout, /malformed=400/);
      assert.equal(forbidden.seen.length, before, 'nothing reached the forbidden server');
      const mine = rows().filter((row) => row.jobId === r.jobId);
      const refused = mine.filter((row) => !row.success);
      assert.ok(refused.length >= 7, `refusals audited: ${refused.map((x) => x.policyRule).join(', ')}`);
      for (const rule of ['default-deny', 'ip-literal', 'request-syntax']) {
        assert.ok(
          rows().some((row) => row.policyRule === rule && !row.success),
          rule,
        );
      }
      const logged = manager.log.read({ limit: 500 }).entries.filter((e) => e.event === 'egress.denied');
      assert.ok(logged.length >= 7, 'denials are in the computer log');
    });
  });

  it("leaves no way around egress: names resolve only to the computer's own addresses on lo, and raw sockets to loopback or any other address fail at once", async () => {
    await withEgressComputer({ policy: policy() }, async ({ run }) => {
      const r = await run(
        [
          'ip -o link 2>/dev/null | wc -l | sed "s/^/links=/" || true',
          'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " " | tr "\\n" " " | sed "s/^/ifaces=/"; echo',
          `python3 - <<'PY'
import socket, errno
def attempt(label, fn):
    try:
        fn()
        print(label + '=connected')
    except OSError as e:
        print(label + '=' + (errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__))
print('dns=' + ','.join(sorted({a[4][0] for a in socket.getaddrinfo('stub.test', 80)})))
print('dns_public=' + ','.join(sorted({a[4][0] for a in socket.getaddrinfo('example.com', 443)})))
def tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect((host, port))
attempt('loopback', lambda: tcp('127.0.0.1', ${stub.port}))
attempt('outside', lambda: tcp('93.184.216.34', 80))
attempt('private', lambda: tcp('10.0.0.1', 80))
attempt('relay', lambda: tcp('127.0.0.1', 3128))
PY`,
        ].join('; '),
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /ifaces=lo $/m);
      // the resolver hands out addresses of lo only (IPv4; AAAA answers are empty)
      assert.match(r.stdout, /^dns=127\.77\.\d+\.\d+$/m);
      assert.match(r.stdout, /^dns_public=127\.77\.\d+\.\d+$/m);
      assert.match(r.stdout, /loopback=ECONNREFUSED/);
      assert.match(r.stdout, /outside=ENETUNREACH/);
      assert.match(r.stdout, /private=ENETUNREACH/);
      assert.match(r.stdout, /relay=connected/);
    });
  });

  it("decides a job's connections with its caller's policy: an agent's narrowed policy refuses what the server allows", async () => {
    await withEgressComputer({ policy: policy() }, async ({ run, rows, policy: server }) => {
      const agent = buildAgentSandbox(server, policySchema.parse(policy()), {
        http: { allow: ['elsewhere.test'] },
      });
      const r = await run(
        `curl -sS -w '\\nstatus=%{http_code}\\n' http://stub.test:${stub.port}/agent`,
        60_000,
        { principal: OWNER, caller: 'agent:run_1', via: 'agent', attended: false, policy: agent.sandbox },
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /status=403/);
      assert.match(r.stdout, /rule agent:default-deny.*the agent's policy\.http\.allow \(AGENT\.md\)/);
      const row = rows().find((x) => x.jobId === r.jobId)!;
      assert.equal(row.caller, 'agent:run_1');
      assert.equal(row.via, 'agent');
      assert.equal(row.policyRule, 'agent:default-deny');
    });
  });

  it("Node's own fetch reaches an allowed name on every Node version, with no proxy variable", async () => {
    await withEgressComputer({ policy: policy() }, async ({ run }) => {
      const r = await run(
        `unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy; node -e "fetch('http://stub.test:${stub.port}/fetch').then(r => r.text()).then(t => console.log('fetched=' + t), e => console.log('failed=' + (e.cause?.code ?? e.message)))"`,
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /fetched=stub says hi to \/fetch/);
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
