/**
 * A preview page opened top-level (its own tab, not the dock's frame) could navigate itself —
 * `location = …`, `<meta http-equiv="refresh">`, a redirect — to any host, with data in the URL:
 * a sandboxed document may always navigate itself, and CSP `navigate-to` does not exist in
 * Chromium. So a top-level open gets this wrapper instead: a page of Paddock's own that frames
 * the same URL in a sandbox without `allow-top-navigation`, under a `frame-src` that admits the
 * preview's own path only. The framed page then navigates within the preview or not at all,
 * exactly as in the dock.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The frame's sandbox (the dock's preview frame uses the same flags). */
const FRAME_SANDBOX = 'allow-scripts allow-forms allow-modals allow-downloads';

/** True for a browser's top-level navigation to a preview URL (not a frame, script or fetch). */
export function isTopLevelOpen(req: IncomingMessage): boolean {
  const dest = req.headers['sec-fetch-dest'];
  const method = req.method ?? 'GET';
  return dest === 'document' && (method === 'GET' || method === 'HEAD');
}

/** Answers a top-level open of `req.url` with the wrapper that frames it. */
export function sendPreviewWrapper(req: IncomingMessage, res: ServerResponse, basePath: string): void {
  const url = req.url ?? `${basePath}/`;
  const host = String(req.headers.host ?? '');
  // the preview's own path on this host and nothing else; without a Host only 'self'
  const frames = /^[A-Za-z0-9.:[\]-]+$/.test(host)
    ? `http://${host}${basePath}/ https://${host}${basePath}/`
    : "'self'";
  const body = `<!doctype html><html><head><meta charset="utf-8"><title>Preview</title><style>html,body{margin:0;height:100%}iframe{border:0;width:100%;height:100%;display:block}</style></head><body><iframe sandbox="${FRAME_SANDBOX}" src="${escapeAttr(url)}"></iframe></body></html>`;
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'content-security-policy': [
      "default-src 'none'",
      "style-src 'unsafe-inline'",
      `frame-src ${frames}`,
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
    'referrer-policy': 'no-referrer',
    vary: 'Sec-Fetch-Dest',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function escapeAttr(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
