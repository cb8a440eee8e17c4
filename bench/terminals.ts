/**
 * Benchmarks of terminals and the preview relay, through the tools' execute and a real HTTP
 * server on 127.0.0.1 (needs root-capable bwrap like the integration tests):
 *
 * - keystroke round trip: one character with send_terminal_input until read_terminal_output
 *   shows its echo (median);
 * - a terminal printing without end: time from ctrl_c to the prompt, and the server's RSS
 *   while a terminal prints 100 MB;
 * - preview relay throughput for a 10 MB response from a server inside the computer, beside
 *   the same download inside the computer (the relay's ceiling).
 *
 * `node dist/bench/terminals.js` prints the figures. Importing this module has no side effects.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BwrapBackend } from '../src/computer/backend/bwrap/backend.js';
import { ComputerManager } from '../src/computer/manager.js';
import { TerminalJournal } from '../src/computer/terminals/journal.js';
import { encodeTerminalCursor } from '../src/computer/terminals/terminal.js';
import { createComputerTools } from '../src/computer/tools/index.js';
import { computerSchema } from '../src/config/computer-schema.js';
import { silentLogger } from '../src/shared/logger.js';
import type { Tool } from '../src/tools/tool.js';
import { PreviewRelay } from '../src/web/preview/relay.js';
import { toolContext } from './computer.js';
import type { Figure } from './run.js';
import { median } from './stats.js';

const PROMPT = 'BENCH> ';
const RESPONSE_BYTES = 10_000_000;
const FLOOD_BYTES = 100_000_000;

type Call = (name: string, input: Record<string, unknown>) => Promise<Record<string, unknown>>;

function toolCaller(m: ComputerManager): Call {
  const ctx = toolContext();
  const tools = new Map<string, Tool>(createComputerTools(m).map((t) => [t.name, t]));
  return async (name, input) => (await tools.get(name)!.execute(input, ctx)).structured!;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Reads a terminal from `cursor` until `marker` appears; returns the cursor after it. */
async function readUntil(call: Call, terminalId: string, cursor: string, marker: string): Promise<string> {
  let at = cursor;
  let tail = '';
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await call('read_terminal_output', { terminalId, cursor: at, byteLimit: 65_536 });
    at = String(r.nextCursor);
    tail = (tail + String(r.output)).slice(-4096);
    if (tail.includes(marker)) return at;
    if (Date.now() > deadline)
      throw new Error(`no "${marker}" within 30 s; last output: ${JSON.stringify(tail.slice(-200))}`);
    if (Number(r.moreBytes) === 0) await tick();
  }
}

async function terminalFigures(m: ComputerManager, figures: Figure[]): Promise<void> {
  const call = toolCaller(m);
  const terminalId = String((await call('create_terminal', {})).terminalId);
  const terminal = m.terminals.resolve(terminalId).terminal;
  const here = () => encodeTerminalCursor(terminalId, terminal.output.endOffset);
  let cursor = here();
  await call('send_terminal_input', { terminalId, text: "PS1='BENCH''> '\n" });
  cursor = await readUntil(call, terminalId, cursor, PROMPT);

  const roundTrips: number[] = [];
  for (let i = 0; i < 200; i++) {
    const ch = String.fromCharCode(97 + (i % 26));
    const t = performance.now();
    await call('send_terminal_input', { terminalId, text: ch });
    cursor = await readUntil(call, terminalId, cursor, ch);
    roundTrips.push(performance.now() - t);
    await call('send_terminal_input', { terminalId, key: 'backspace' });
    cursor = await readUntil(call, terminalId, cursor, '\b');
  }
  figures.push({
    name: 'keystroke round trip: send_terminal_input → echo in read_terminal_output (median of 200)',
    value: median(roundTrips.slice(20)),
    unit: 'ms',
    target: '≤ 10 ms',
  });
  // what the journal adds to each keystroke: its input entry and the mark of the output it caused
  const journal = new TerminalJournal({ cols: 120, rows: 32, at: Date.now() });
  const journaling: number[] = [];
  for (let i = 0; i < 20_000; i++) {
    const t = performance.now();
    journal.input(
      { source: 'agent', who: 'mcp:bench' },
      String.fromCharCode(97 + (i % 26)),
      i * 2,
      Date.now() + i * 4000,
    );
    journal.output(i * 2 + 1, Date.now() + i * 4000 + 10);
    journaling.push(performance.now() - t);
  }
  figures.push({
    name: 'journal of one keystroke (its input entry and output mark), median',
    value: median(journaling) * 1000,
    unit: 'µs',
    target: 'a sliver of the round trip',
    peers: [{ name: 'the keystroke round trip above, in µs', value: median(roundTrips.slice(20)) * 1000 }],
  });

  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const start = terminal.output.endOffset;
  const t = performance.now();
  await call('send_terminal_input', { terminalId, text: `head -c ${FLOOD_BYTES} /dev/zero | tr '\\0' y\n` });
  while (terminal.output.endOffset - start < FLOOD_BYTES) await new Promise((r) => setTimeout(r, 2));
  const tail = Math.max(terminal.output.startOffset, terminal.output.endOffset - 65_536);
  await readUntil(call, terminalId, encodeTerminalCursor(terminalId, tail), PROMPT);
  const floodMs = performance.now() - t;
  clearInterval(sampler);
  figures.push({
    name: 'a terminal printing 100 MB: throughput to the host',
    value: (terminal.output.endOffset - start) / 1e6 / (floodMs / 1000),
    unit: 'MB/s',
    target: '—',
  });
  figures.push({
    name: 'server RSS growth while a terminal prints 100 MB (retention 1 MiB)',
    value: (peak - baseline) / 1e6,
    unit: 'MB',
    target: 'bounded (≪ 100 MB)',
  });

  const interrupts: number[] = [];
  for (let i = 0; i < 7; i++) {
    const from = terminal.output.endOffset;
    await call('send_terminal_input', { terminalId, text: 'yes\n' });
    while (terminal.output.endOffset - from < 20_000_000) await new Promise((r) => setTimeout(r, 2));
    const at = here();
    const c = performance.now();
    await call('send_terminal_input', { terminalId, key: 'ctrl_c' });
    await readUntil(call, terminalId, at, PROMPT);
    interrupts.push(performance.now() - c);
  }
  figures.push({
    name: 'terminal printing without end: ctrl_c → prompt back (median of 7)',
    value: median(interrupts),
    unit: 'ms',
    target: '≤ 200 ms',
  });
}

const SERVER = `import { createServer } from 'node:http';
const body = Buffer.alloc(${RESPONSE_BYTES}, 97);
createServer((req, res) => { res.writeHead(200, { 'content-length': body.length }); res.end(body); }).listen(8000, '127.0.0.1');
`;

function download(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => {
        bytes += d.length;
      });
      res.on('end', () => resolve(bytes));
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function previewFigures(m: ComputerManager, figures: Figure[]): Promise<void> {
  const c = m.computer!;
  writeFileSync(join(c.hostWorkspace, 'bench-server.mjs'), SERVER);
  await m.runCommand({
    script: 'node /workspace/bench-server.mjs >/dev/null 2>&1 &',
    waitMs: 0,
    timeoutMs: 3_600_000,
  });
  const deadline = Date.now() + 20_000;
  while (!(await m.preview.probe(c, 8000, '/')).listening) {
    if (Date.now() > deadline) throw new Error('the bench server did not start in the computer');
    await new Promise((r) => setTimeout(r, 50));
  }
  const relay = new PreviewRelay(m.preview);
  const server: Server = createServer((req, res) => void relay.handlePreview(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/preview/`;
    const rates: number[] = [];
    for (let i = 0; i < 15; i++) {
      const t = performance.now();
      const bytes = await download(url);
      if (bytes !== RESPONSE_BYTES) throw new Error(`received ${bytes} bytes of ${RESPONSE_BYTES}`);
      if (i >= 3) rates.push(bytes / 1e6 / ((performance.now() - t) / 1000));
    }
    figures.push({
      name: 'preview relay: 10 MB response through handlePreview (median of 12)',
      value: median(rates),
      unit: 'MB/s',
      target: '≥ 100 MB/s',
    });
    const inside = await m.runCommand({
      script:
        'for i in 1 2 3 4 5; do curl -s -o /dev/null -w "%{speed_download}\\n" http://127.0.0.1:8000/; done',
      waitMs: 10_000,
      timeoutMs: 60_000,
    });
    const direct = inside.stdout.trim().split('\n').map(Number).filter(Number.isFinite);
    if (direct.length > 0) {
      figures.push({
        name: 'same response inside the computer (curl, median of 5)',
        value: median(direct) / 1e6,
        unit: 'MB/s',
        target: 'ceiling',
      });
    }
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** Terminal and preview figures. */
export async function benchTerminals(): Promise<Figure[]> {
  const figures: Figure[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-terminals-'));
  const logger = silentLogger();
  const m = new ComputerManager({
    backend: new BwrapBackend({ logger }),
    config: computerSchema.parse({}),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
  });
  try {
    m.launch('python');
    await m.computer!.booted;
    if (m.computer!.lifecycle !== 'running') throw new Error(`boot failed: ${m.computer!.bootError}`);
    await terminalFigures(m, figures);
    await previewFigures(m, figures);
  } finally {
    await m.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return figures;
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  for (const f of await benchTerminals())
    process.stdout.write(
      `${f.name.padEnd(86)} ${f.value.toFixed(3).padStart(10)} ${f.unit.padEnd(5)} ${f.target}\n`,
    );
}
