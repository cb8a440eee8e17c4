import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The server token: created once in the data directory (mode 0600), reused afterwards. */
export function loadOrCreateToken(dataDir: string): { token: string; created: boolean; file: string } {
  const file = join(dataDir, 'token');
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    if (token.length >= 32) return { token, created: false, file };
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, created: true, file };
}

/** Constant-time comparison of a presented secret with the token. */
export function tokenMatches(presented: string | undefined, token: string): boolean {
  if (!presented) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The credential of an `Authorization: Bearer <token>` header. The scheme is matched in any
 * case (RFC 7235: `bearer`, `BEARER` are the same scheme); anything else gives undefined.
 */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1];
}

/** Reads one cookie from a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

/** Hostname of a Host header value (`example.com:8080` → `example.com`, `[::1]:80` → `[::1]`). */
export function hostnameOf(hostHeader: string): string {
  if (hostHeader.startsWith('[')) {
    const end = hostHeader.indexOf(']');
    return end > 0 ? hostHeader.slice(0, end + 1).toLowerCase() : hostHeader.toLowerCase();
  }
  const colon = hostHeader.lastIndexOf(':');
  return (colon > 0 ? hostHeader.slice(0, colon) : hostHeader).toLowerCase();
}
