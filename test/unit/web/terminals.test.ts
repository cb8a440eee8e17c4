import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BwrapBackend } from '../../../src/computer/backend/bwrap/backend.js';
import type { ComputerManager } from '../../../src/computer/manager.js';
import { ComputerService } from '../../../src/computer/service.js';
import { computerSchema } from '../../../src/config/computer-schema.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { dockComputerFromService } from '../../../src/web/dock/index.js';
import { type DockServer, openSocket, startDockServer, type TestSocket } from './harness.js';

const TIMEOUT_MS = 10_000;

async function poll<T>(what: string, check: () => T | undefined | null | false): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The terminal output a page received so far, once it contains `needle`. */
async function outputOf(s: TestSocket, terminalId: string, needle: string): Promise<string> {
  let text = '';
  try {
    return await poll(`"${needle}" in the page`, () => {
      text = s.messages
        .map((m) => (m.type === 'terminal.output' && m.terminalId === terminalId ? m.data : ''))
        .join('');
      return text.includes(needle) && text;
    });
  } catch {
    throw new Error(`"${needle}" never reached the page; got ${JSON.stringify(text.slice(-400))}`);
  }
}

describe('terminals and preview through the dock websocket', () => {
  let server: DockServer;
  let cookie: string;
  let service: ComputerService;
  let manager: ComputerManager;
  let dir: string;
  let generation: number;

  /** Everything the terminal kept so far (what read_terminal_output returns from the start). */
  const retained = (id: string) => manager.terminals.read(id, undefined, 1 << 20).output;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-dock-term-'));
    const logger = silentLogger();
    service = new ComputerService({
      backend: new BwrapBackend({ logger }),
      config: computerSchema.parse({ autoLaunch: false }),
      dataDir: dir,
      dockUrl: 'http://127.0.0.1',
      logger,
    });
    manager = service.byKey('private:dock');
    manager.launch('shell');
    generation = (await manager.requireRunning()).generation;
    server = await startDockServer({
      dir,
      computer: dockComputerFromService(service, { logger }),
    });
    cookie = await server.login();
  });

  after(async () => {
    await server?.close();
    await service?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the agent\u2019s input in the page and delivers the person\u2019s keystrokes to the PTY', async () => {
    const { id } = await manager.terminals.create();
    const s = await openSocket(server, { cookie, origin: server.base });
    try {
      const snapshot = await s.next('snapshot');
      assert.deepEqual(snapshot.features, { computer: true, terminals: true, preview: true });
      assert.ok(snapshot.terminals.some((t) => t.id === id && t.active));
      s.send({ type: 'terminal.attach', terminalId: id });
      await s.next('terminal.attached', (m) => m.terminalId === id);
      // The agent's input, as send_terminal_input hands it over; the shell computes 42.
      await manager.terminals.write(id, 'echo from-agent-$((6*7))\r', { source: 'agent', who: 'mcp:t' });
      await outputOf(s, id, 'from-agent-42');
      s.send({ type: 'terminal.input', terminalId: id, data: 'echo from-person-$((2+3))\r' });
      await outputOf(s, id, 'from-person-5');
      s.send({ type: 'terminal.resize', terminalId: id, cols: 132, rows: 40, requestId: 'rs' });
      assert.equal((await s.next('reply', (m) => m.requestId === 'rs')).ok, true);
      const listed = manager.terminals.list().find((t) => t.id === id);
      assert.deepEqual([listed?.cols, listed?.rows], [132, 40]);
      s.send({ type: 'terminal.input', terminalId: id, data: 'echo size-$(stty size | tr " " x)\r' });
      await outputOf(s, id, 'size-40x132');
      assert.deepEqual(s.invalid, []);
    } finally {
      await s.close();
    }
  });

  it('replays retained output to a page that attaches late, and resumes from a cursor without repeating', async () => {
    const { id } = await manager.terminals.create();
    await manager.terminals.write(id, 'echo before-attach-$((40+2))\r', { source: 'agent', who: 'mcp:t' });
    await poll('the output kept before any page attached', () => retained(id).includes('before-attach-42'));
    const first = await openSocket(server, { cookie, origin: server.base });
    let cursor: string;
    try {
      await first.next('snapshot');
      first.send({ type: 'terminal.attach', terminalId: id });
      await outputOf(first, id, 'before-attach-42');
      const outputs = first.messages.filter((m) => m.type === 'terminal.output' && m.terminalId === id);
      const last = outputs[outputs.length - 1];
      assert.ok(last?.type === 'terminal.output');
      cursor = last.cursor;
    } finally {
      await first.close();
    }
    await manager.terminals.write(id, 'echo while-away-$((1+1))\r', { source: 'agent', who: 'mcp:t' });
    await poll('the output kept while no page was attached', () => retained(id).includes('while-away-2'));
    const again = await openSocket(server, { cookie, origin: server.base });
    try {
      await again.next('snapshot');
      again.send({ type: 'terminal.attach', terminalId: id, fromCursor: cursor });
      const text = await outputOf(again, id, 'while-away-2');
      assert.ok(!text.includes('before-attach'), text);
    } finally {
      await again.close();
    }
  });

  it('follows the active terminal when it changes, and reports a stale terminal as an error reply', async () => {
    const s = await openSocket(server, { cookie, origin: server.base });
    try {
      await s.next('snapshot');
      const { id } = await manager.terminals.create();
      const list = await s.next('terminal.list', (m) => m.terminals.some((t) => t.id === id && t.active));
      assert.equal(list.terminals.filter((t) => t.active).length, 1);
      s.send({ type: 'terminal.input', terminalId: `g${generation}.term999`, data: 'x' });
      const reply = await s.next('reply', (m) => m.request === 'terminal.input');
      assert.equal(reply.ok, false);
      assert.equal(reply.code, 'NOT_FOUND');
    } finally {
      await s.close();
    }
  });

  it('moves the preview on a navigation from the page and pushes the new state', async () => {
    const s = await openSocket(server, { cookie, origin: server.base });
    try {
      await s.next('snapshot');
      s.send({ type: 'preview.navigate', path: '/index.html?x=1', requestId: 'nav' });
      assert.equal((await s.next('reply', (m) => m.requestId === 'nav')).ok, true);
      const moved = await s.next('preview.state', (m) => m.preview.path === '/index.html?x=1');
      assert.equal(moved.preview.url, '/preview/index.html?x=1');
      // Nothing listens on the preview port in this computer: the probe's finding is pushed too.
      const probed = await s.next(
        'preview.state',
        (m) => m.preview.path === '/index.html?x=1' && m.preview.status === 'unreachable',
      );
      assert.match(String(probed.preview.message), /port 8000/);
      s.send({ type: 'preview.navigate', path: '/../etc/passwd', requestId: 'bad' });
      const bad = await s.next('reply', (m) => m.requestId === 'bad');
      assert.equal(bad.ok, false);
      assert.equal(bad.code, 'INVALID_ARGUMENT');
      assert.match(bad.message, /"\.\." segment/);
      assert.equal(
        manager.preview.state().path,
        '/index.html?x=1',
        'the refused path did not move the preview',
      );
      assert.deepEqual(s.invalid, []);
    } finally {
      await s.close();
    }
  });
});
