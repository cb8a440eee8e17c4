/**
 * A dock page that lies about its browser computer. The test's websocket client signs in, offers
 * to host, and then speaks for the guest itself: honest answers where the test needs a running
 * computer, forged or malformed ones where it attacks. The server is the real one (dock, hosts,
 * BrowserBackend, ComputerManager); only the guest is played by the test, so no emulator boots.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BrowserBackend, withBrowserBackend } from '../../../src/computer/backend/browser/backend.js';
import {
  BrowserImage,
  IMAGE_FILES,
  IMAGE_VERSION,
  STATE_FILE,
} from '../../../src/computer/backend/browser/image.js';
import { BwrapBackend } from '../../../src/computer/backend/bwrap/backend.js';
import { decodeJobCursor } from '../../../src/computer/cursors.js';
import type { JobResult } from '../../../src/computer/jobs/job.js';
import { ComputerManager } from '../../../src/computer/manager.js';
import { computerSchema } from '../../../src/config/computer-schema.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { DockVmHosts } from '../../../src/web/dock/vm-hosts.js';
import { pollUntil } from '../../helpers/poll.js';
import { type DockServer, openSocket, startDockServer, type TestSocket } from './harness.js';

const RETAINED = 64 * 1024;

/** An image directory whose files match their manifest (never booted here). */
function imageDir(root: string, version = IMAGE_VERSION, state?: 'matching' | 'corrupt'): string {
  const dir = join(root, `image-v${version}${state ? `-${state}` : ''}`);
  mkdirSync(dir, { recursive: true });
  const files: Record<string, { bytes: number; sha256: string }> = {};
  const sign = (data: Buffer) => ({
    bytes: data.length,
    sha256: createHash('sha256').update(data).digest('hex'),
  });
  for (const name of IMAGE_FILES) {
    const data = Buffer.from(`${name} of a test image`);
    writeFileSync(join(dir, name), data);
    files[name] = sign(data);
  }
  const manifest: Record<string, unknown> = { version, kernel: 'test', files };
  if (state) {
    const data = Buffer.from('a snapshot of a test machine');
    writeFileSync(join(dir, STATE_FILE), state === 'matching' ? data : Buffer.from('tampered'));
    manifest.state = { file: STATE_FILE, ...sign(data), memoryMb: 128 };
  }
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

type Answer = (rid: string, op: string, args: string[]) => string | null;

/** The honest guest's answer to each agent request (jobs are started and left to the test). */
const honest: Answer = (rid, op) => {
  if (op === 'commit') return `@${rid} ok 10 true`;
  if (op === 'which') return `@${rid} ok -`;
  if (op === 'kind') return `@${rid} ok missing`;
  return `@${rid} ok 7`;
};

/** A signed-in page that offered to host and plays the guest of the computer it is given. */
class PlayedPage {
  vm = '';
  answer: Answer = honest;
  readonly requests: string[] = [];
  private pending = '';

  constructor(readonly socket: TestSocket) {
    socket.ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as { type: string; vm?: string; port?: number; data?: string };
      if (m.type === 'vm.boot' && m.vm) this.vm = m.vm;
      if (m.type !== 'vm.serial' || m.port !== 1 || m.vm !== this.vm) return;
      this.pending += Buffer.from(m.data ?? '', 'base64').toString('latin1');
      for (;;) {
        const nl = this.pending.indexOf('\n');
        if (nl < 0) break;
        const [rid = '', op = '', ...args] = this.pending.slice(0, nl).split(' ');
        // a `put` (token, length) carries its chunk after the line: answer once the whole chunk is here
        const payload = op === 'put' ? Number(args[1]) : 0;
        if (this.pending.length < nl + 1 + payload) break;
        this.requests.push(this.pending.slice(0, nl));
        this.pending = this.pending.slice(nl + 1 + payload);
        const reply = this.answer(rid, op, args);
        if (reply !== null) this.agent(`${reply}\n`);
      }
    });
  }

  /** Bytes on the agent's port, in messages the dock accepts. */
  agent(text: string | Buffer, vm = this.vm): void {
    const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'latin1');
    for (let at = 0; at < bytes.length; at += 60 * 1024) {
      this.socket.send({
        type: 'vm.serial',
        vm,
        port: 1,
        data: bytes.subarray(at, at + 60 * 1024).toString('base64'),
      });
    }
  }

  /** The job token of the newest `run` request. */
  lastJob(): string {
    const run = this.requests.filter((l) => l.split(' ')[1] === 'run').at(-1);
    return run?.split(' ')[2] ?? '';
  }
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return isPaddockError(e) ? `${e.code}: ${e.message}` : String(e);
  }
}

describe('a dock page that forges its browser computer', () => {
  let root: string;
  let server: DockServer;
  let manager: ComputerManager;
  let hosts: DockVmHosts;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'paddock-vm-hostile-'));
    const logger = silentLogger();
    hosts = new DockVmHosts(logger);
    const image = new BrowserImage(imageDir(root));
    server = await startDockServer({ browser: { hosts, image } });
    manager = new ComputerManager({
      backend: withBrowserBackend(new BwrapBackend({ logger }), new BrowserBackend(hosts, image)),
      config: computerSchema.parse({
        autoLaunch: false,
        retentionBytes: RETAINED,
        profiles: [{ id: 'tab', name: 'Tab', backend: 'browser' }],
      }),
      dataDir: root,
      dockUrl: 'http://127.0.0.1:7331',
      logger,
    });
  });

  after(async () => {
    await manager?.close();
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** A new page that offered to host, and a computer booted in it (the page says ready). */
  async function bootedPage(): Promise<PlayedPage> {
    const page = new PlayedPage(
      await openSocket(server, { cookie: await server.login(), origin: server.base }),
    );
    page.socket.send({ type: 'vm.host', requestId: 'h' });
    await page.socket.next('reply', (r) => r.requestId === 'h');
    manager.launch('tab');
    await pollUntil(() => page.vm !== '', 'vm.boot');
    page.agent('@0 ready 1 0.5\n');
    await manager.computer!.booted;
    assert.equal(manager.computer!.lifecycle, 'running', manager.computer!.bootError ?? '');
    return page;
  }

  /** Starts a job and waits for the page to see its `run`; returns the job id and its token. */
  async function startJob(page: PlayedPage, script: string) {
    const before = page.requests.length;
    const r = await manager.runCommand({ script, waitMs: 0, timeoutMs: 600_000 });
    await pollUntil(() => page.requests.slice(before).some((l) => l.includes(' run ')), 'the run request');
    return { jobId: r.jobId, token: page.lastJob() };
  }

  /** The job once its end was observed. */
  async function ended(jobId: string): Promise<JobResult> {
    let read = manager.readJob(jobId, undefined, 4096);
    await pollUntil(() => {
      read = manager.readJob(jobId, undefined, 4096);
      return read.terminationObserved;
    }, `${jobId} to end`);
    return read;
  }

  /** The computer ended; what a caller is told now. */
  async function endedWith(): Promise<string> {
    await pollUntil(() => manager.computer?.lifecycle !== 'running', 'the computer to end');
    return codeOf(manager.runCommand({ script: 'true', waitMs: 0, timeoutMs: 1000 }));
  }

  it('relays a pushed job: separate stdout and stderr, the exit status, then forgets the job', async () => {
    const page = await bootedPage();
    const { jobId, token } = await startJob(page, 'echo hi; echo oops >&2; exit 3');
    page.agent(
      `@d ${token} 1 ${Buffer.from('hi\n').toString('base64')}\n@d ${token} 2 ${Buffer.from('oops\n').toString('base64')}\n@x ${token} 3\n@e ${token} 1\n@e ${token} 2\n`,
    );
    const done = await ended(jobId);
    assert.deepEqual([done.stdout, done.stderr, done.exitCode], ['hi\n', 'oops\n', 3]);
    await pollUntil(() => page.requests.some((l) => l.endsWith(` forget ${token}`)), 'forget');
    page.socket.ws.close();
  });

  it('refuses bytes a page sends for a computer it does not host, and messages of the wrong shape, and keeps the computer', async () => {
    const page = await bootedPage();
    const other = new PlayedPage(
      await openSocket(server, { cookie: await server.login(), origin: server.base }),
    );
    const attempts: Array<[string, Record<string, unknown>]> = [
      ['another page, this vm', { type: 'vm.serial', vm: page.vm, port: 1, data: 'QA==' }],
      ['a vm nobody hosts', { type: 'vm.serial', vm: 'vm-0000000000000000', port: 1, data: 'QA==' }],
      ['an id of the wrong form', { type: 'vm.serial', vm: '../vm', port: 1, data: 'QA==' }],
      ['port 3', { type: 'vm.serial', vm: page.vm, port: 3, data: 'QA==' }],
      ['a port as text', { type: 'vm.serial', vm: page.vm, port: '1', data: 'QA==' }],
      ['data that is not base64', { type: 'vm.serial', vm: page.vm, port: 1, data: '@0 ready' }],
      ['data over the bound', { type: 'vm.serial', vm: page.vm, port: 1, data: 'A'.repeat(100 * 1024) }],
      ['an extra field', { type: 'vm.serial', vm: page.vm, port: 1, data: 'QA==', computer: 'x' }],
    ];
    for (const [what, message] of attempts) {
      const from = what === 'another page, this vm' ? other : page;
      const requestId = `a${attempts.findIndex(([w]) => w === what)}`;
      from.socket.send({ ...message, requestId });
      const reply = await from.socket.next('reply', (r) => r.ok === false && r.message.length > 0, 5000);
      from.socket.messages.splice(from.socket.messages.indexOf(reply), 1);
      assert.equal(reply.code, 'INVALID_ARGUMENT', `${what}: ${reply.message}`);
    }
    const { jobId, token } = await startJob(page, 'true');
    page.agent(`@x ${token} 0\n@e ${token} 1\n@e ${token} 2\n`);
    const done = await ended(jobId);
    assert.equal(done.exitCode, 0);
    assert.equal(manager.computer?.lifecycle, 'running');
    other.socket.ws.close();
    page.socket.ws.close();
  });

  const breaks: Array<[string, (token: string) => string]> = [
    ['a reply to a request that was not asked', () => '@99 ok 1\n'],
    ['an exit status that is not a number', (t) => `@x ${t} zero\n`],
    ['output on fd 3', (t) => `@d ${t} 3 aGk=\n`],
    ['output that is not base64', (t) => `@d ${t} 1 h!i\n`],
    ['an event for a job of another form', () => '@x ../s1 0\n'],
    ['preview connection bytes on fd 2', () => '@d c7 2 aGk=\n'],
    ['a preview connection status that is not a number', () => '@x c7 -1\n'],
    ['a preview connection end with data', () => '@e c7 1 aGk=\n'],
    ['a reply line over the bound', () => 'A'.repeat(300 * 1024)],
  ];
  for (const [what, line] of breaks) {
    it(`ends the computer with a clear error on ${what}`, async () => {
      const page = await bootedPage();
      const { token } = await startJob(page, 'sleep 100');
      page.answer = () => null;
      page.agent(line(token));
      const error = await endedWith();
      assert.match(error, /NOT_RUNNING/);
      assert.match(error, /broke the browser computer's protocol/);
      await page.socket.next('vm.stop', (m) => m.vm === page.vm);
      page.socket.ws.close();
    });
  }

  it('ends the computer when the page sends a message over the socket bound', async () => {
    const page = await bootedPage();
    page.socket.ws.send(
      JSON.stringify({ type: 'vm.serial', vm: page.vm, port: 1, data: 'A'.repeat(200 * 1024) }),
    );
    const error = await endedWith();
    assert.match(error, /page that hosted this browser computer went away/);
  });

  it('keeps only the newest output of a job that floods, with cursors that say what was dropped, and stays responsive', async () => {
    const page = await bootedPage();
    const { jobId, token } = await startJob(page, 'yes');
    const first = manager.readJob(jobId, undefined, 10);
    const chunk = Buffer.alloc(45 * 1024, 'y\n');
    const batch = `@d ${token} 1 ${chunk.toString('base64')}\n`.repeat(20);
    const batches = 10;
    for (let i = 0; i < batches; i++) {
      page.agent(batch);
      // the dock still answers this page between the floods
      page.socket.send({ type: 'vm.host', requestId: `still-${i}` });
      await page.socket.next('reply', (r) => r.requestId === `still-${i}` && r.ok);
    }
    const total = batches * 20 * chunk.length;
    let newest = manager.readJob(jobId, undefined, RETAINED * 4);
    await pollUntil(() => {
      newest = manager.readJob(jobId, undefined, RETAINED * 4);
      return decodeJobCursor(newest.nextCursor, jobId).stdout === total;
    }, 'all the output relayed');
    assert.ok(
      newest.stdout.length > 0 && newest.stdout.length <= RETAINED,
      `kept ${newest.stdout.length} bytes`,
    );
    assert.equal(newest.terminationObserved, false);
    assert.match(
      await codeOf(Promise.resolve().then(() => manager.readJob(jobId, first.nextCursor, 10))),
      /OUTPUT_EXPIRED/,
    );
    assert.equal(manager.computer?.lifecycle, 'running');
    page.socket.ws.close();
  });

  it('offers no browser profile when the image is of another version, and names the command that builds it', () => {
    const old = new BrowserImage(imageDir(root, IMAGE_VERSION - 1)).check();
    assert.equal(old.ok, false);
    assert.match(
      !old.ok ? old.reason : '',
      new RegExp(
        `version ${IMAGE_VERSION - 1} but this server needs version ${IMAGE_VERSION}.*node scripts/build-browser-image\\.mjs`,
      ),
    );
  });

  it('restores only a snapshot that matches its manifest; a tampered one means a cold boot', () => {
    const good = new BrowserImage(imageDir(root, IMAGE_VERSION, 'matching')).check();
    assert.deepEqual(good.ok && good.state, { memoryMb: 128 });
    const tampered = new BrowserImage(imageDir(root, IMAGE_VERSION, 'corrupt')).check();
    assert.equal(tampered.ok, true, 'the image itself is fine');
    assert.equal(tampered.ok && tampered.state, null);
    const none = new BrowserImage(imageDir(root)).check();
    assert.equal(none.ok && none.state, null);
  });
});
