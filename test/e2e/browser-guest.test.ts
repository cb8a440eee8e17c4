/**
 * The browser computer's guest side in real Chromium: the built image boots in v86, and the host's
 * own GuestClient speaks the guest protocol to it through BrowserGuest, as a computer does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BrowserGuest } from '../../src/computer/backend/browser/guest.js';
import { GuestClient } from '../../src/computer/link/guest-client.js';
import type { GuestEvent, Hello } from '../../src/guest/protocol.js';
import { bootVmPage, type VmPage } from '../helpers/browser-vm-page.js';
import { pollUntil } from '../helpers/poll.js';

const BOOT_TIMEOUT_MS = 240_000;
const roots = (kind: 'read' | 'write') => ({
  kind,
  sets: [{ allow: [{ label: `files.${kind}[0]=/workspace`, root: '/workspace' }], deny: [] }],
});
const READ = roots('read');
const WRITE = roots('write');

describe('browser computer guest (v86 in Chromium)', { timeout: 600_000 }, () => {
  let vm: VmPage;
  let guest: BrowserGuest;
  let client: GuestClient;
  let hello: Hello;
  const events: GuestEvent[] = [];
  const data = new Map<string, Buffer>();
  const ended = new Set<string>();
  const text = (stream: number, fd: number) =>
    (data.get(`${stream}/${fd}`) ?? Buffer.alloc(0)).toString('utf8');

  before(async () => {
    vm = await bootVmPage();
    guest = new BrowserGuest(vm.link, ['sh', 'python3']);
    const said = new Promise<Hello>((resolve) => {
      client = new GuestClient(guest.fromGuest, guest.toGuest, {
        onHello: resolve,
        onEvent: (e) => events.push(e),
        onData: (s, fd, p) =>
          data.set(`${s}/${fd}`, Buffer.concat([data.get(`${s}/${fd}`) ?? Buffer.alloc(0), p])),
        onEnd: (s, fd) => ended.add(`${s}/${fd}`),
        onBroken: (reason) => assert.fail(`link broke: ${reason}`),
      });
    });
    const started = Date.now();
    hello = (await pollUntil(
      () => Promise.race([said, new Promise<null>((r) => setTimeout(() => r(null), 1000))]),
      'the guest hello',
      BOOT_TIMEOUT_MS,
    )) as Hello;
    process.stderr.write(`browser computer booted to hello in ${Date.now() - started} ms\n`);
  });

  after(async () => {
    guest?.close('test over');
    await vm?.close();
  });

  type Exit = Extract<GuestEvent, { t: 'exit' }>;
  const exitOf = async (stream: number): Promise<Exit> =>
    pollUntil(
      () => events.find((e): e is Exit => e.t === 'exit' && e.stream === stream),
      `exit of job ${stream}`,
      60_000,
    ) as Promise<Exit>;

  it('says hello with the programs the image has', () => {
    assert.equal(hello.shell, '/bin/sh');
    assert.equal(hello.programs.sh, true);
    assert.equal(hello.programs.python3, false);
  });

  it('runs a job with separate stdout and stderr and its exit code', async () => {
    const { pid } = await client.call('exec', {
      stream: 1,
      argv: ['/bin/sh', '-c', 'echo "out $((6*7))"; echo err-line >&2; cd; pwd; echo "$GREETING"; exit 3'],
      cwd: '/tmp',
      env: { GREETING: "it's here", HOME: '/workspace' },
      rlimits: {},
      hold: false,
      newSession: true,
    });
    assert.ok(pid > 1);
    const exit = await exitOf(1);
    assert.deepEqual([exit.exitCode, exit.signal], [3, null]);
    await pollUntil(() => ended.has('1/1') && ended.has('1/2'), 'both streams ended');
    assert.equal(text(1, 1), "out 42\n/workspace\nit's here\n");
    assert.equal(text(1, 2), 'err-line\n');
  });

  const sh = async (stream: number, script: string) => {
    await client.call('exec', {
      stream,
      argv: ['/bin/sh', '-c', script],
      cwd: '/',
      env: {},
      rlimits: {},
      hold: false,
      newSession: true,
    });
    assert.equal((await exitOf(stream)).exitCode, 0, text(stream, 2));
  };

  it('writes and reads back binary files, and an exclusive create refuses an existing name', async () => {
    await assert.rejects(
      client.call(
        'fs.write',
        { path: '/workspace/d/blob.bin', scope: WRITE, overwrite: false },
        { attachment: Buffer.from('x') },
      ),
      /does not exist/,
      'a write never makes its parent directory',
    );
    await sh(40, 'mkdir /workspace/d');
    const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 256));
    const w = await client.call(
      'fs.write',
      { path: '/workspace/d/blob.bin', scope: WRITE, overwrite: false },
      { attachment: bytes },
    );
    assert.deepEqual(w, { bytesWritten: 5000, created: true, rule: 'files.write[0]=/workspace' });
    const whole = await client.call('fs.read', {
      path: '/workspace/d/blob.bin',
      scope: READ,
      offset: 0,
      byteLimit: 5000,
    });
    assert.equal(whole.eof, true);
    assert.ok(whole.attachment?.equals(bytes), 'the whole file reads back byte for byte');
    const r = await client.call('fs.read', {
      path: '/workspace/d/blob.bin',
      scope: READ,
      offset: 1000,
      byteLimit: 100,
    });
    assert.equal(r.size, 5000);
    assert.equal(r.eof, false);
    assert.equal(r.rule, 'files.read[0]=/workspace');
    assert.deepEqual(r.attachment, bytes.subarray(1000, 1100));
    await assert.rejects(
      client.call(
        'fs.write',
        { path: '/workspace/d/blob.bin', scope: WRITE, overwrite: false },
        { attachment: Buffer.from('x') },
      ),
      /exists/,
    );
    const list = await client.call('fs.list', { path: '/workspace/d', scope: READ, offset: 0, limit: 10 });
    assert.deepEqual(
      list.entries.map((e) => [e.name, e.type, e.size]),
      [['blob.bin', 'file', 5000]],
    );
    await assert.rejects(
      client.call('fs.read', { path: '/workspace/none', scope: READ, offset: 0, byteLimit: 10 }),
      /does not exist/,
    );
  });

  it('follows no link out of the roots: reads, lists and writes through one are refused and change nothing', async () => {
    await sh(
      41,
      'mkdir -p /tmp/out && echo secret >/tmp/out/s.txt && ln -s /tmp/out /workspace/od && ln -s /tmp/out/s.txt /workspace/pw && ln -s /tmp/out/new.txt /workspace/dangling && echo in >/workspace/b.txt && ln -s b.txt /workspace/ok-link',
    );
    for (const path of ['/workspace/pw', '/workspace/od/s.txt']) {
      await assert.rejects(
        client.call('fs.read', { path, scope: READ, offset: 0, byteLimit: 100 }),
        (e: unknown) => {
          assert.equal((e as { code?: string }).code, 'POLICY_DENIED', path);
          return true;
        },
      );
    }
    await assert.rejects(
      client.call('fs.list', { path: '/workspace/od', scope: READ, offset: 0, limit: 10 }),
      /leads/,
    );
    for (const [path, overwrite] of [
      ['/workspace/od/new.txt', true],
      ['/workspace/dangling', true],
      ['/workspace/dangling', false],
    ] as const) {
      await assert.rejects(
        client.call('fs.write', { path, scope: WRITE, overwrite }, { attachment: Buffer.from('x') }),
        (e: unknown) => ['POLICY_DENIED', 'FILE_EXISTS'].includes((e as { code?: string }).code ?? ''),
      );
    }
    await sh(42, 'test "$(ls /tmp/out)" = s.txt');
    const ok = await client.call('fs.read', {
      path: '/workspace/ok-link',
      scope: READ,
      offset: 0,
      byteLimit: 100,
    });
    assert.equal(ok.attachment?.toString(), 'in\n', 'a link that stays inside the roots still works');
  });

  it('kills the whole family of a job, children included, and nothing else', async () => {
    const start = (stream: number, argv: string[]) =>
      client.call('exec', { stream, argv, cwd: '/', env: {}, rlimits: {}, hold: false, newSession: true });
    await start(2, ['/bin/sh', '-c', '(sleep 301; echo never) & sleep 302; echo never']);
    await start(3, ['/bin/sh', '-c', 'sleep 303']);
    const ps = async (stream: number) => {
      await start(stream, ['/bin/ps', '-o', 'args']);
      await exitOf(stream);
      await pollUntil(() => ended.has(`${stream}/1`), 'ps output');
      return text(stream, 1);
    };
    await pollUntil(
      async () => (await ps(10 + events.length)).includes('sleep 302'),
      'the job running',
      60_000,
    );
    await client.call('signal', { stream: 2, signal: 'SIGKILL', group: true });
    const exit = await exitOf(2);
    assert.equal(exit.signal, 'SIGKILL');
    const left = await ps(100);
    assert.doesNotMatch(left, /sleep 30[12]/);
    assert.match(left, /sleep 303/);
    assert.equal(text(2, 1), '');
  });

  it('types into the terminal on the second serial port, reads the answer back, and resizes its window', async () => {
    await client.call('pty.open', {
      stream: 50,
      argv: ['/bin/sh', '-i'],
      cwd: '/workspace',
      env: {},
      cols: 80,
      rows: 24,
    });
    await client.call('pty.write', { stream: 50 }, { attachment: Buffer.from('echo "typed $((20+22))"\n') });
    await pollUntil(() => text(50, 1).includes('typed 42'), 'the terminal echo', 60_000);
    await client.call('pty.write', { stream: 50 }, { attachment: Buffer.from('echo "size $(stty size)"\n') });
    await pollUntil(() => text(50, 1).includes('size 24 80'), 'the opened size', 60_000);
    await client.call('pty.resize', { stream: 50, cols: 132, rows: 40 });
    await client.call('pty.write', { stream: 50 }, { attachment: Buffer.from('echo "size $(stty size)"\n') });
    await pollUntil(() => text(50, 1).includes('size 40 132'), 'the resized size', 60_000);
    await client.call('pty.close', { stream: 50 });
    await pollUntil(() => events.some((e) => e.t === 'pty.exit' && e.stream === 50), 'pty.exit');
  });
});
