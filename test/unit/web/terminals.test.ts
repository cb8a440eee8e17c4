import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BwrapBackend } from '../../../src/computer/backend/bwrap.js';
import { ComputerManager } from '../../../src/computer/manager.js';
import { computerSchema } from '../../../src/config/computer-schema.js';
import { PaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { dockComputerFromManager } from '../../../src/web/dock/index.js';
import type { DockPreview } from '../../../src/web/dock/protocol.js';
import type { Disposable, PreviewSource } from '../../../src/web/dock/sources.js';
import { type DockServer, openSocket, startDockServer, type TestSocket } from './harness.js';
import { PtyTerminalSource } from './pty-source.js';

/** A preview source that records navigations (the relay itself is the guest's). */
class RecordingPreview implements PreviewSource {
  private current: DockPreview = {
    path: null,
    url: null,
    port: 8000,
    status: 'idle',
    message: null,
    navigation: 0,
  };
  private readonly listeners = new Set<(s: DockPreview) => void>();
  state(): DockPreview {
    return this.current;
  }
  async navigate(path: string): Promise<DockPreview> {
    if (!path.startsWith('/') || path.includes('..')) {
      throw new PaddockError('INVALID_ARGUMENT', 'Use a guest path such as /index.html.');
    }
    this.current = {
      ...this.current,
      path,
      url: `/preview/8000${path}`,
      status: 'loading',
      navigation: this.current.navigation + 1,
    };
    for (const l of this.listeners) l(this.current);
    return this.current;
  }
  onChange(listener: (s: DockPreview) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }
}

async function outputOf(s: TestSocket, terminalId: string, needle: string): Promise<string> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const text = s.messages
      .filter((m) => m.type === 'terminal.output' && m.terminalId === terminalId)
      .map((m) => (m.type === 'terminal.output' ? m.data : ''))
      .join('');
    if (text.includes(needle)) return text;
    if (Date.now() > deadline)
      throw new Error(`"${needle}" never arrived; got ${JSON.stringify(text.slice(-400))}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('terminals and preview through the dock websocket', () => {
  let server: DockServer;
  let cookie: string;
  let manager: ComputerManager;
  let terminals: PtyTerminalSource;
  let preview: RecordingPreview;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-dock-term-'));
    const logger = silentLogger();
    manager = new ComputerManager({
      backend: new BwrapBackend({ logger }),
      config: computerSchema.parse({ autoLaunch: false }),
      dataDir: dir,
      dockUrl: 'http://127.0.0.1',
      logger,
    });
    terminals = new PtyTerminalSource();
    preview = new RecordingPreview();
    server = await startDockServer({
      dir,
      computer: dockComputerFromManager(manager, { logger, terminals, preview }),
    });
    cookie = await server.login();
  });

  after(async () => {
    terminals?.close();
    await server?.close();
    await manager?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the agent\u2019s input in the page and delivers the person\u2019s keystrokes to the PTY', async () => {
    const id = terminals.create('shell');
    const s = await openSocket(server, { cookie, origin: server.base });
    try {
      const snapshot = await s.next('snapshot');
      assert.deepEqual(snapshot.features, { computer: true, terminals: true, preview: true });
      assert.ok(snapshot.terminals.some((t) => t.id === id && t.active));
      s.send({ type: 'terminal.attach', terminalId: id });
      await s.next('terminal.attached', (m) => m.terminalId === id);
      terminals.agentWrite(id, 'echo from-agent-$((6*7))\r');
      await outputOf(s, id, 'from-agent-42');
      s.send({ type: 'terminal.input', terminalId: id, data: 'echo from-person-$((2+3))\r' });
      await outputOf(s, id, 'from-person-5');
      assert.ok(terminals.writes.some((w) => w.terminalId === id && w.data.startsWith('echo from-person')));
      s.send({ type: 'terminal.resize', terminalId: id, cols: 132, rows: 40, requestId: 'rs' });
      assert.equal((await s.next('reply', (m) => m.requestId === 'rs')).ok, true);
      assert.deepEqual(terminals.sizeOf(id), { cols: 132, rows: 40 });
    } finally {
      await s.close();
    }
  });

  it('replays retained output to a page that attaches late, and resumes from a cursor without repeating', async () => {
    const id = terminals.create('late');
    terminals.agentWrite(id, 'echo before-attach\r');
    const first = await openSocket(server, { cookie, origin: server.base });
    let cursor: string;
    try {
      await first.next('snapshot');
      first.send({ type: 'terminal.attach', terminalId: id });
      await outputOf(first, id, 'before-attach');
      const outputs = first.messages.filter((m) => m.type === 'terminal.output');
      const last = outputs[outputs.length - 1];
      assert.ok(last?.type === 'terminal.output');
      cursor = last.cursor;
    } finally {
      await first.close();
    }
    terminals.agentWrite(id, 'echo while-away\r');
    const again = await openSocket(server, { cookie, origin: server.base });
    try {
      await again.next('snapshot');
      again.send({ type: 'terminal.attach', terminalId: id, fromCursor: cursor });
      const text = await outputOf(again, id, 'while-away');
      assert.ok(!text.includes('before-attach'), text);
    } finally {
      await again.close();
    }
  });

  it('follows the active terminal when it changes, and reports a stale terminal as an error reply', async () => {
    const s = await openSocket(server, { cookie, origin: server.base });
    try {
      await s.next('snapshot');
      const id = terminals.create('switched');
      const list = await s.next('terminal.list', (m) => m.terminals.some((t) => t.id === id && t.active));
      assert.equal(list.terminals.filter((t) => t.active).length, 1);
      s.send({ type: 'terminal.input', terminalId: 'g1.term999', data: 'x' });
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
      const state = await s.next('preview.state', (m) => m.preview.path === '/index.html?x=1');
      assert.equal(state.preview.url, '/preview/8000/index.html?x=1');
      s.send({ type: 'preview.navigate', path: '/../etc/passwd', requestId: 'bad' });
      const bad = await s.next('reply', (m) => m.requestId === 'bad');
      assert.equal(bad.ok, false);
      assert.equal(bad.code, 'INVALID_ARGUMENT');
      assert.deepEqual(s.invalid, []);
    } finally {
      await s.close();
    }
  });
});
