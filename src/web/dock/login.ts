/**
 * Sign-in for the dock: one-time login codes (printed by `paddock serve` as a link) are
 * exchanged for a session secret that lives in this process only.
 *
 * The cookie holds a random session secret, never the server token: the long-lived token
 * (which also opens `/mcp`) is never stored in a browser profile, a session cannot call
 * `/mcp`, and every session ends when the server stops. Secrets and codes are kept as
 * SHA-256 digests, so lookups leak nothing about their value through timing.
 */
import { createHash, randomBytes } from 'node:crypto';

/** Options of {@link DockLogin}; the defaults suit `paddock serve`. */
export interface DockLoginOptions {
  /** How long a login code stays valid. Default 10 minutes. */
  codeTtlMs?: number;
  /** Unused codes kept at once; the oldest is dropped past it. Default 16. */
  maxCodes?: number;
  /** Sessions kept at once; the least recently used is dropped past it. Default 64. */
  maxSessions?: number;
  /** Longest life of a session. Default 7 days. */
  sessionMaxAgeMs?: number;
  /** Clock (epoch milliseconds); tests pass their own. */
  now?: () => number;
}

/** A freshly issued login code. */
export interface LoginCode {
  code: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

interface Session {
  createdAt: number;
  lastSeenAt: number;
}

function digest(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

/** Login codes and sessions of one server process. */
export class DockLogin {
  private readonly codes = new Map<string, number>();
  private readonly sessions = new Map<string, Session>();
  private readonly codeTtlMs: number;
  private readonly maxCodes: number;
  private readonly maxSessions: number;
  private readonly sessionMaxAgeMs: number;
  private readonly now: () => number;

  constructor(options: DockLoginOptions = {}) {
    this.codeTtlMs = options.codeTtlMs ?? 10 * 60_000;
    this.maxCodes = options.maxCodes ?? 16;
    this.maxSessions = options.maxSessions ?? 64;
    this.sessionMaxAgeMs = options.sessionMaxAgeMs ?? 7 * 24 * 3_600_000;
    this.now = options.now ?? Date.now;
  }

  /** Issues a single-use code (for a login link). */
  issueCode(): LoginCode {
    const code = randomBytes(24).toString('base64url');
    const expiresAt = this.now() + this.codeTtlMs;
    this.codes.set(digest(code), expiresAt);
    while (this.codes.size > this.maxCodes) {
      const oldest = this.codes.keys().next().value;
      if (oldest === undefined) break;
      this.codes.delete(oldest);
    }
    return { code, expiresAt };
  }

  /**
   * Exchanges a code for a new session secret. A code works once and only before it
   * expires; `null` otherwise.
   */
  redeem(code: string): string | null {
    if (code.length === 0 || code.length > 128) return null;
    const key = digest(code);
    const expiresAt = this.codes.get(key);
    if (expiresAt === undefined) return null;
    this.codes.delete(key);
    if (this.now() > expiresAt) return null;
    const secret = randomBytes(32).toString('base64url');
    const now = this.now();
    this.sessions.set(digest(secret), { createdAt: now, lastSeenAt: now });
    while (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    return secret;
  }

  /** Whether a session secret is live (and marks it used). */
  valid(secret: string): boolean {
    if (secret.length === 0 || secret.length > 128) return false;
    const key = digest(secret);
    const session = this.sessions.get(key);
    if (!session) return false;
    const now = this.now();
    if (now - session.createdAt > this.sessionMaxAgeMs) {
      this.sessions.delete(key);
      return false;
    }
    session.lastSeenAt = now;
    this.sessions.delete(key);
    this.sessions.set(key, session);
    return true;
  }

  /** A stable, non-secret handle of a session (binds CSRF nonces to it). */
  sessionHandle(secret: string): string {
    return digest(`handle:${secret}`);
  }

  /** Ends every session (e.g. on shutdown). */
  revokeAll(): void {
    this.sessions.clear();
    this.codes.clear();
  }
}
