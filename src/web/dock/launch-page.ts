/**
 * `/launch/<id>`: shows a launch link's profile and its full startup script, and boots only
 * when the person confirms. The confirmation is a POST that must carry a per-page nonce
 * (single use, bound to the session and the link) and an Origin of this server; the session
 * cookie is SameSite=Strict. Opening the page changes nothing.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ERROR_HTTP_STATUS, isPaddockError, type PaddockError, toPaddockError } from '../../shared/errors.js';
import { escapeHtml, sendPage } from './html.js';
import type { DockComputer, LaunchLinkView } from './sources.js';

/** Path pattern of launch links. */
export const LAUNCH_PATH = /^\/launch\/([A-Za-z0-9_-]{1,64})$/;
const MAX_FORM_BYTES = 4096;

interface Nonce {
  linkId: string;
  session: string;
  expiresAt: number;
}

/** Single-use confirmation nonces. */
export class LaunchNonces {
  private readonly nonces = new Map<string, Nonce>();

  constructor(
    private readonly ttlMs = 30 * 60_000,
    private readonly max = 256,
    private readonly now: () => number = Date.now,
  ) {}

  issue(linkId: string, session: string): string {
    const nonce = randomBytes(18).toString('base64url');
    this.nonces.set(nonce, { linkId, session, expiresAt: this.now() + this.ttlMs });
    while (this.nonces.size > this.max) {
      const oldest = this.nonces.keys().next().value;
      if (oldest === undefined) break;
      this.nonces.delete(oldest);
    }
    return nonce;
  }

  /** True once for a nonce issued for this link and session, before it expires. */
  consume(nonce: string, linkId: string, session: string): boolean {
    const n = this.nonces.get(nonce);
    if (!n) return false;
    this.nonces.delete(nonce);
    return n.linkId === linkId && n.session === session && this.now() <= n.expiresAt;
  }
}

/** Shows control and bidirectional-override characters visibly, so a script cannot hide text. */
export function renderScript(script: string): string {
  let out = '';
  for (const ch of script) {
    const cp = ch.codePointAt(0)!;
    const hidden =
      (cp < 0x20 && ch !== '\n' && ch !== '\t') ||
      cp === 0x7f ||
      (cp >= 0x80 && cp < 0xa0) ||
      (cp >= 0x200b && cp <= 0x200f) ||
      (cp >= 0x202a && cp <= 0x202e) ||
      (cp >= 0x2066 && cp <= 0x2069) ||
      cp === 0xfeff;
    out += hidden
      ? `<span class="ctl">&lt;U+${cp.toString(16).toUpperCase().padStart(4, '0')}&gt;</span>`
      : escapeHtml(ch);
  }
  return out;
}

function describeScript(script: string): string {
  const bytes = Buffer.byteLength(script);
  const lines = script.length === 0 ? 0 : script.split('\n').length;
  const size = bytes < 10_240 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
  return `${lines} line${lines === 1 ? '' : 's'}, ${size}`;
}

/** The confirmation page. */
export function renderLaunchPage(
  link: LaunchLinkView,
  current: ReturnType<DockComputer['status']>,
  nonce: string,
  error: string | null,
  /** The profile's computer runs in a dock page: the page confirming leads to can host it. */
  hostedByPage = false,
): string {
  const p = link.profile;
  const canBoot = p.available || hostedByPage;
  const replaces =
    current.generation !== null && current.lifecycle !== 'stopped'
      ? `<p class="warn">Confirming replaces the current computer (generation ${current.generation}, ${escapeHtml(current.lifecycle)}): every process in it is stopped.</p>`
      : '';
  const script = link.startupScript
    ? `<pre class="script" id="script">${renderScript(link.startupScript)}</pre>`
    : '<p class="note">This link has no startup script: the profile boots as it is.</p>';
  return `<style>.ctl{color:var(--err);background:#3a1714;border-radius:3px;padding:0 2px}
pre.script{white-space:pre-wrap;overflow-wrap:anywhere}</style>
<h1>Launch a computer from a link</h1>
<p>Review what this link runs. Nothing has started; the computer boots only when you confirm, then its startup script runs where you can watch it in the dock.</p>
${error ? `<p class="err" role="alert">${escapeHtml(error)}</p>` : ''}
<dl>
<dt>Profile</dt><dd>${escapeHtml(p.name)} <code>${escapeHtml(p.id)}</code> ${
    p.available
      ? '<span class="badge ok">available</span>'
      : hostedByPage
        ? '<span class="badge ok">boots in the dock page that confirming opens</span>'
        : `<span class="badge no">unavailable</span> <span class="err">${escapeHtml(p.unavailableReason ?? '')}</span>`
  }</dd>
${p.description ? `<dt>About</dt><dd>${escapeHtml(p.description)}</dd>` : ''}
<dt>Link</dt><dd><code>${escapeHtml(link.id)}</code>, created ${escapeHtml(new Date(link.createdAt).toISOString())}</dd>
<dt>Startup script</dt><dd>${link.startupScript ? describeScript(link.startupScript) : 'none'}</dd>
</dl>
${script}
${replaces}
<form method="post" action="/launch/${escapeHtml(link.id)}" class="row">
<input type="hidden" name="nonce" value="${escapeHtml(nonce)}">
<button type="submit" id="confirm"${canBoot ? '' : ' disabled'}>Confirm and boot</button>
<a href="/">Cancel and open the dock</a>
</form>`;
}

/** Reads a small urlencoded form; null when too large or of another type. */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  const type = req.headers['content-type'] ?? '';
  if (!type.startsWith('application/x-www-form-urlencoded')) return null;
  const body = await readSmallBody(req, MAX_FORM_BYTES);
  return body === null ? null : new URLSearchParams(body.toString('utf8'));
}

/** Reads a request body of at most `maxBytes`; null when it is larger. */
export async function readSmallBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * Whether a state-changing request comes from a page of this server: an Origin header is
 * required (browsers send it on every POST) and must name this host; a Sec-Fetch-Site
 * header, when present, must say same-origin.
 */
export function sameOriginPost(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  const host = req.headers.host;
  if (!origin || !host) return false;
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  if (parsed.host.toLowerCase() !== host.toLowerCase()) return false;
  const site = req.headers['sec-fetch-site'];
  return site === undefined || site === 'same-origin';
}

/** Sends the page for an error that stops the launch flow. */
export function sendLaunchError(res: ServerResponse, e: unknown): void {
  const error: PaddockError = toPaddockError(e);
  const status = isPaddockError(e) ? ERROR_HTTP_STATUS[error.code] : 500;
  sendPage(
    res,
    status,
    'Launch link',
    `<h1>This launch link cannot be opened</h1><p class="err">${escapeHtml(error.message)}</p><p><a href="/">Open the dock</a></p>`,
  );
}
