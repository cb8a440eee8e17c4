/**
 * The browser computer's VM in a real Chromium page, without the dock: a loopback server gives
 * the page v86 and the built image, and the page's serial ports are bridged to a BrowserVmLink.
 * Tests of the guest side use it; the dock's own page is tested end to end elsewhere.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { BrowserVmLink } from '../../src/computer/backend/browser/agent-line.js';
import {
  BrowserImage,
  type BrowserVmSettings,
  IMAGE_FILES,
  STATE_FILE,
  vmMachine,
} from '../../src/computer/backend/browser/image.js';
import { CHROMIUM } from './clients.js';

const v86Dir = join(dirname(createRequire(import.meta.url).resolve('v86/package.json')), 'build');

const PAGE = (
  { memoryMb, cmdline, emulator }: BrowserVmSettings,
  restore: boolean,
) => `<!doctype html><meta charset=utf-8><body><script type=module>
import { V86 } from '/v86/libv86.mjs';
// like the dock's page: bytes for the guest wait until the machine is loaded (a restore loses them)
let early = [];
const out = { 1: [], 2: [] };
let flushing = false;
const flush = () => { flushing = false; for (const port of [1, 2]) { if (out[port].length === 0) continue;
  const bytes = out[port].splice(0); window.__serialOut(port, btoa(String.fromCharCode(...bytes))); } };
const emu = new V86({ ...${JSON.stringify(emulator)}, wasm_path: '/v86/v86.wasm', memory_size: ${memoryMb} * 1024 * 1024,
  bios: { url: '/img/bios.bin' }, vga_bios: { url: '/img/vgabios.bin' }, bzimage: { url: '/img/bzImage' },
  initrd: { url: '/img/initrd.img' }, cmdline: ${JSON.stringify(cmdline)}, autostart: true,
  ${restore ? "initial_state: { url: '/img/state.bin' }," : ''} });
emu.add_listener('emulator-loaded', () => { const e = early; early = null; for (const [p, d] of e) emu.serial_send_bytes(p, d); });
for (const port of [1, 2]) emu.add_listener('serial' + port + '-output-byte', (b) => {
  out[port].push(b); if (!flushing) { flushing = true; setTimeout(flush, 0); } });
window.__send = (port, b64) => { const d = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  if (early) early.push([port, d]); else emu.serial_send_bytes(port, d); };
window.__stop = () => emu.destroy();
</script>`;

/** What the page script puts on its window. */
interface VmWindow {
  __send(port: number, b64: string): void;
}

/** A VM booting in its own Chromium page. */
export interface VmPage {
  browser: Browser;
  page: Page;
  link: BrowserVmLink;
  /** Closes the page (the link's `gone` settles) and the browser. */
  close(): Promise<void>;
}

async function serve(image: BrowserImage, restore: boolean): Promise<Server> {
  const html = PAGE(vmMachine(), restore);
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const send = (type: string, body: Buffer | string) => {
      res.writeHead(200, { 'content-type': type });
      res.end(body);
    };
    if (url === '/') return send('text/html', html);
    const name = url.slice(url.lastIndexOf('/') + 1);
    let file: string | null = null;
    if (url.startsWith('/v86/') && ['libv86.mjs', 'v86.wasm'].includes(name)) file = join(v86Dir, name);
    if (url.startsWith('/img/') && [...IMAGE_FILES, STATE_FILE].includes(name as never))
      file = join(image.dir, name);
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    const type = name.endsWith('.mjs')
      ? 'text/javascript'
      : name.endsWith('.wasm')
        ? 'application/wasm'
        : 'application/octet-stream';
    readFile(file).then(
      (b) => send(type, b),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/**
 * Boots the built image in a fresh Chromium page (or restores its snapshot with `restore`, which
 * the backend must then expect too); throws when the image is not built.
 */
export async function bootVmPage(image = new BrowserImage(), restore = false): Promise<VmPage> {
  const checked = image.check();
  if (!checked.ok) throw new Error(checked.reason);
  if (restore && !checked.state) throw new Error('the image has no snapshot to restore');
  const server = await serve(image, restore);
  const browser = await chromium.launch(CHROMIUM);
  const page = await browser.newPage();
  const listeners = new Set<(port: 1 | 2, data: Buffer) => void>();
  await page.exposeFunction('__serialOut', (port: 1 | 2, b64: string) => {
    const data = Buffer.from(b64, 'base64');
    for (const l of listeners) l(port, data);
  });
  let goneResolve!: (why: string) => void;
  const gone = new Promise<string>((resolve) => {
    goneResolve = resolve;
  });
  page.on('close', () => goneResolve('the page that hosted the computer went away'));
  page.on('pageerror', (e) => process.stderr.write(`vm page error: ${e.message}\n`));
  const link: BrowserVmLink = {
    send: (port, data) => {
      page
        .evaluate(([p, b]) => (globalThis as never as VmWindow).__send(p, b), [
          port,
          data.toString('base64'),
        ] as const)
        .catch(() => undefined);
    },
    onData: (l) => {
      listeners.add(l);
      return { dispose: () => listeners.delete(l) };
    },
    gone,
    close: (reason) => {
      if (reason) goneResolve(reason);
      void page.close().catch(() => undefined);
    },
  };
  await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  return {
    browser,
    page,
    link,
    close: async () => {
      await page.close().catch(() => undefined);
      await browser.close();
      server.close();
    },
  };
}
