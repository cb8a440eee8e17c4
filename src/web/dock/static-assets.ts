/**
 * The built page (Vite output in dist/ui): index.html and hashed assets. Names are matched
 * against a strict pattern, so no request can leave the directory.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeHtml, securityHeaders, sendPage, sendText } from './html.js';

/** dist/ui of this build (this file is compiled to dist/src/web/dock/). */
export function defaultUiDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'ui');
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};

const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Files Vite copies from public/ to the root of the build (`/favicon.ico` answers the SVG icon). */
const ROOT_FILES: Record<string, string> = { '/favicon.svg': 'favicon.svg', '/favicon.ico': 'favicon.svg' };

/** Serves the page and its assets from one directory. */
export class UiAssets {
  constructor(
    readonly dir: string,
    private readonly csp: string,
  ) {}

  /** Whether the page was built. */
  get built(): boolean {
    return existsSync(join(this.dir, 'index.html'));
  }

  /** Whether a path names an asset this serves. */
  matches(pathname: string): boolean {
    if (pathname.startsWith('/assets/')) return ASSET_NAME.test(pathname.slice('/assets/'.length));
    return Object.hasOwn(ROOT_FILES, pathname);
  }

  /** The dock page, or a page saying how to build it. */
  async sendIndex(res: ServerResponse): Promise<void> {
    let html: Buffer;
    try {
      html = await readFile(join(this.dir, 'index.html'));
    } catch {
      sendPage(
        res,
        503,
        'Dock not built',
        `<h1>The dock page is not built</h1>
<p>The server is running, but the browser page was not found in <code>${escapeHtml(this.dir)}</code>.</p>
<p>Run <code>npm run build</code> in the Paddock checkout, then reload this page. MCP clients are not affected.</p>`,
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...securityHeaders(this.csp) });
    res.end(html);
  }

  /** An asset under /assets/ (or a root file); 404 when absent. */
  async sendAsset(res: ServerResponse, pathname: string): Promise<void> {
    const rel = pathname.startsWith('/assets/')
      ? join('assets', pathname.slice('/assets/'.length))
      : pathname.slice(1);
    const type = TYPES[extname(rel)];
    if (!type) return sendText(res, 404, 'Not found.');
    let body: Buffer;
    try {
      body = await readFile(join(this.dir, rel));
    } catch {
      return sendText(res, 404, 'Not found; the page may have been rebuilt, reload it.');
    }
    res.writeHead(200, {
      'content-type': type,
      'content-length': String(body.length),
      'x-content-type-options': 'nosniff',
      'cache-control': pathname.startsWith('/assets/') ? 'private, max-age=31536000, immutable' : 'no-cache',
    });
    res.end(body);
  }
}
