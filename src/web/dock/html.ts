/**
 * Server-rendered pages of the dock (sign-in, launch-link confirmation, build missing):
 * one escaped template with the same look as the page, and the security headers every
 * dock response carries.
 */
import type { ServerResponse } from 'node:http';

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * Headers of every dock response: no framing by other sites, no sniffing, no caching, no
 * Referer to other sites. (`same-origin`, not `no-referrer`: with `no-referrer` browsers send
 * `Origin: null` on the page's own form posts, which the launch confirmation must refuse.)
 */
export function securityHeaders(csp: string): Record<string, string> {
  return {
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
    'cache-control': 'no-store',
  };
}

/** CSP of the server-rendered pages: inline styles only, forms to this origin only. */
export const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STYLE = `
:root { color-scheme: dark; --bg:#0d1117; --panel:#151b23; --line:#262f3b; --text:#e6edf3; --muted:#8b98a8;
  --accent:#3fb68b; --accent-ink:#06281c; --warn:#e3b341; --err:#f47067; }
* { box-sizing: border-box; }
body { margin:0; min-height:100vh; background:var(--bg); color:var(--text);
  font:14px/1.5 ui-sans-serif, system-ui, -apple-system, "Segoe UI", sans-serif; display:flex; justify-content:center; }
main { width:min(920px, 100% - 32px); margin:48px 0; }
.brand { display:flex; align-items:center; gap:10px; font-weight:650; letter-spacing:.2px; margin-bottom:24px; color:var(--muted); }
.brand b { color:var(--text); }
.mark { width:22px; height:22px; border-radius:6px; background:linear-gradient(135deg,#3fb68b,#2a7ab8); }
.card { background:var(--panel); border:1px solid var(--line); border-radius:12px; padding:24px 28px; }
h1 { font-size:20px; margin:0 0 8px; }
p { margin:8px 0; color:#c9d4df; }
code, pre, .mono { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size:13px; }
code { background:#0b0f14; border:1px solid var(--line); border-radius:6px; padding:1px 6px; }
pre.script { background:#0b0f14; border:1px solid var(--line); border-radius:8px; padding:14px 16px; margin:16px 0;
  max-height:55vh; overflow:auto; white-space:pre; tab-size:4; line-height:1.45; }
dl { display:grid; grid-template-columns:max-content 1fr; gap:6px 18px; margin:16px 0; }
dt { color:var(--muted); } dd { margin:0; }
.row { display:flex; gap:12px; align-items:center; margin-top:20px; flex-wrap:wrap; }
button { font:inherit; font-weight:600; border:0; border-radius:8px; padding:9px 18px; cursor:pointer;
  background:var(--accent); color:var(--accent-ink); }
button:disabled { background:#2b3440; color:var(--muted); cursor:not-allowed; }
a { color:#6cb6ff; }
.note { color:var(--muted); font-size:13px; }
.err { color:var(--err); } .warn { color:var(--warn); }
.badge { display:inline-block; font-size:12px; padding:1px 8px; border-radius:999px; border:1px solid var(--line); }
.badge.ok { color:var(--accent); border-color:#1f5c46; } .badge.no { color:var(--err); border-color:#6b2a26; }
`;

/** A full HTML page; `body` must already be escaped. */
export function renderPage(title: string, body: string, extraHead = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin"><title>${escapeHtml(title)} · Paddock</title>${extraHead}<style>${STYLE}</style></head>
<body><main><div class="brand"><span class="mark"></span><b>Paddock</b> dock</div>
<div class="card">${body}</div></main></body></html>`;
}

/** Sends a server-rendered page with the dock's security headers. */
export function sendPage(
  res: ServerResponse,
  status: number,
  title: string,
  body: string,
  extraHeaders: Record<string, string | string[]> = {},
  extraHead = '',
): void {
  const html = renderPage(title, body, extraHead);
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    ...securityHeaders(PAGE_CSP),
    ...extraHeaders,
  });
  res.end(html);
}

/** Sends plain text (API-style answers and non-HTML clients). */
export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

/** Whether the client asked for HTML (a browser navigation). */
export function wantsHtml(accept: string | undefined): boolean {
  return accept?.includes('text/html') === true;
}
