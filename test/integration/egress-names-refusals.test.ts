import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OWNER } from '../../src/shared/principal.js';
import { pollUntil } from '../helpers/poll.js';
import { withComputer } from '../unit/computer/fixture.js';
import { type LocalServer, startServer } from '../unit/net/helpers.js';
import { withEgressComputer } from './egress-fixture.js';

const NO_PROXY_VARIABLES =
  'unset HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY http_proxy https_proxy all_proxy no_proxy';

describe('egress by name: refusals the agent can read, and attacks from inside (real bwrap)', {
  concurrency: false,
}, () => {
  let stub: LocalServer;
  let forbidden: LocalServer;
  before(async () => {
    stub = await startServer((req, res) => res.end(`hi ${req.url}`));
    forbidden = await startServer((_req, res) => res.end('should never be reached'));
  });
  after(async () => {
    await stub.close();
    await forbidden.close();
  });

  const policy = () => ({
    http: {
      allow: [`stub.test:${stub.port}`],
      hosts: { 'stub.test': '127.0.0.1', 'denied.test': '127.0.0.1', 'github.test': '127.0.0.1' },
    },
  });

  it("a refused connection writes one line per destination to the job's stderr and lists it in egressRefused; plain http keeps its 403 body", async () => {
    await withEgressComputer({ policy: policy() }, async ({ run, rows }) => {
      const before = forbidden.seen.length;
      const r = await run(
        [
          NO_PROXY_VARIABLES,
          'curl -sS https://github.test/ 2>/dev/null; echo "https=$?"',
          'curl -sS https://github.test/again 2>/dev/null; echo "again=$?"',
          'curl -sS http://denied.test/page | head -1',
          'ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=5 git@github.test true 2>/dev/null; echo "ssh=$?"',
        ].join('\n'),
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /https=35|https=56|https=52/);
      assert.match(
        r.stdout,
        /Paddock egress refused denied\.test:80 \(rule default-deny\).*policy\.http\.allow/,
      );
      assert.match(r.stdout, /ssh=255/);
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('paddock: '));
      assert.deepEqual(lines, [
        'paddock: egress to github.test:443 refused (rule default-deny); to allow it, add "github.test" to policy.http.allow in paddock.yaml.',
        'paddock: egress to denied.test:80 refused (rule default-deny); to allow it, add "denied.test" to policy.http.allow in paddock.yaml.',
        'paddock: egress to github.test:22 refused (rule default-deny); to allow it, add "github.test:22" to policy.tcp.allow in paddock.yaml.',
      ]);
      assert.deepEqual(r.egressRefused, [
        { host: 'github.test', port: 443, rule: 'default-deny' },
        { host: 'denied.test', port: 80, rule: 'default-deny' },
        { host: 'github.test', port: 22, rule: 'default-deny' },
      ]);
      const refused = rows().filter((row) => row.jobId === r.jobId && !row.success);
      assert.equal(refused.length, 4, 'one row per refused connection');
      assert.ok(refused.every((row) => row.errorCode === 'POLICY_DENIED' && row.parentId === r.parentId));
      assert.equal(forbidden.seen.length, before);
    });
  });

  it("names a computer's connections after the job that made them, even when a process forges another job's credentials or drops its environment", async () => {
    await withEgressComputer({ policy: policy() }, async ({ run, rows, manager }) => {
      const victim = await manager.runCommand({
        script: 'sleep 30',
        waitMs: 0,
        timeoutMs: 60_000,
        channel: {
          caller: { principal: OWNER, caller: 'mcp:victim', via: 'direct', attended: true },
          parentId: 'inv_victim',
        },
      });
      const r = await run(
        [
          // another job's user name with a guessed password, then no environment at all
          `HTTP_PROXY=http://${victim.jobId}:guessed@127.0.0.1:3128 curl -sS --noproxy '*' http://denied.test/forged | head -c 40; echo`,
          `env -i /usr/bin/curl -sS http://stub.test:${stub.port}/bare`,
        ].join('\n'),
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /hi \/bare/);
      const forged = rows().filter((row) => JSON.parse(row.input).path === '/forged');
      assert.equal(forged.length, 1);
      assert.equal(forged[0]!.jobId, r.jobId, 'the forging job, found by its cgroup');
      assert.equal(forged[0]!.caller, 'mcp:egress-test');
      const bare = rows().filter((row) => JSON.parse(row.input).host === 'stub.test');
      assert.equal(bare.length, 1);
      assert.equal(bare[0]!.jobId, r.jobId, 'a process with no environment, found by its cgroup');
      assert.deepEqual(manager.readJob(victim.jobId, undefined, 1 << 20).egressRefused, []);
      await manager.cancelJob(victim.jobId);
    });
  });

  it("names a connection after the job that made it while another job holds TCP sockets of its own, even with that job's user name", async () => {
    await withEgressComputer({ policy: policy() }, async ({ run, rows, manager }) => {
      // the other job holds a listening TCP socket: no job is the only one with a socket, so the
      // connection is found in the namespace's table by its two ends
      const other = await manager.runCommand({
        script: `python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print("ready", flush=True); time.sleep(30)'`,
        waitMs: 0,
        timeoutMs: 60_000,
        channel: {
          caller: { principal: OWNER, caller: 'mcp:other', via: 'direct', attended: true },
          parentId: 'inv_other',
        },
      });
      try {
        await pollUntil(
          () => /ready/.test(String(manager.readJob(other.jobId, undefined, 1 << 20).stdout)),
          'the other job to hold its socket',
          30_000,
        );
        const r = await run(
          `${NO_PROXY_VARIABLES}; HTTP_PROXY=http://${other.jobId}:guessed@127.0.0.1:3128 curl -sS --noproxy '*' http://stub.test:${stub.port}/beside`,
        );
        assert.match(r.stdout, /hi \/beside/, r.stderr);
        const mine = rows().filter((row) => JSON.parse(row.input).host === 'stub.test');
        assert.equal(mine.length, 1);
        assert.equal(mine[0]!.jobId, r.jobId, 'the connecting job, not the one holding a socket');
        assert.equal(mine[0]!.caller, 'mcp:egress-test');
      } finally {
        await manager.cancelJob(other.jobId);
      }
    });
  });

  it('keeps the resolver and the names to itself: no program binds them, UDP other than DNS goes nowhere, garbage does not stop it', async () => {
    await withEgressComputer({ policy: policy() }, async ({ run }) => {
      const r = await run(
        [
          NO_PROXY_VARIABLES,
          `python3 - <<'PY'
import socket, errno
def attempt(label, fn):
    try:
        fn()
        print(label + '=ok')
    except OSError as e:
        print(label + '=' + errno.errorcode.get(e.errno, str(e.errno)))
addr = socket.gethostbyname('stub.test')
def bind(host, port):
    s = socket.socket(); s.bind((host, port)); s.listen()
attempt('bind-resolver', lambda: bind('127.0.0.53', 53))
attempt('bind-name-443', lambda: bind(addr, 443))
def udp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    s.sendto(b'x', (host, port)); s.recvfrom(10)
attempt('udp-name', lambda: udp(addr, 443))
attempt('udp-outside', lambda: udp('192.0.2.1', 53))
# a flood of garbage, truncated and reflected messages at the resolver
g = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(2000):
    g.sendto(bytes([i % 256]) * (i % 600), ('127.0.0.53', 53))
t = socket.create_connection(('127.0.0.53', 53)); t.sendall(b'\\xff\\xff' + b'A' * 70000); t.close()
print('after=' + socket.gethostbyname('after.test'))
PY`,
        ].join('\n'),
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /bind-resolver=EACCES/);
      assert.match(r.stdout, /bind-name-443=EACCES/);
      assert.match(r.stdout, /udp-name=(ECONNREFUSED|timeout|ETIMEDOUT)|udp-name=None/);
      assert.match(r.stdout, /udp-outside=ENETUNREACH/);
      assert.match(r.stdout, /after=127\.77\.\d+\.\d+/);
    });
  });

  it('a computer without network says so at the first lookup, at once, in the job that made it', async () => {
    await withComputer({}, async ({ manager }) => {
      manager.launch('shell');
      await manager.computer!.booted;
      const started = await manager.runCommand({
        script: `getent hosts registry.example.test; echo "getent=$?"; python3 -c "import socket
try:
    socket.getaddrinfo('registry.example.test', 443)
except socket.gaierror as e:
    print('py=' + str(e.errno))"`,
        waitMs: 0,
        timeoutMs: 30_000,
      });
      const done = await pollUntil(
        () => {
          const now = manager.readJob(started.jobId, undefined, 1 << 20);
          return now.terminationObserved ? now : null;
        },
        'the lookup job',
        30_000,
      );
      assert.equal(done.exitCode, 0, done.stderr);
      assert.match(done.stdout, /getent=2/);
      assert.match(done.stdout, /py=-(2|3)/);
      const lines = done.stderr.split('\n').filter((l) => l.startsWith('paddock: '));
      assert.equal(lines.length, 1, done.stderr);
      assert.match(
        lines[0]!,
        /no network, so looking up registry\.example\.test failed at once \(profile "shell" has network mode none\)/,
      );
      assert.deepEqual(done.egressRefused, [
        { host: 'registry.example.test', port: 0, rule: 'network-none' },
      ]);
    });
  });
});
