/**
 * Streaming extractor of tool-channel frames from a job's stderr (runs in the guest).
 *
 * A frame is `ESC _ paddock;<nonce>;<id>;<base64url payload> ESC \` (an APC sequence, which
 * terminals do not display); a payload that starts with `{` is JSON as it is (never holding ESC). Frames carrying this job's nonce are taken out of the stream;
 * everything else, including frames with another nonce, stays ordinary output, byte for
 * byte. Memory is bounded: a payload over the limit is discarded as it streams and reported
 * as oversized, never buffered whole.
 */

import type { ChannelFrame } from './protocol.js';

const ESC = 0x1b;
const PREFIX = Buffer.from('\x1b_paddock;');
const MAX_TOKEN = 64;
/** Largest payload accepted (base64url characters). */
export const MAX_FRAME_BYTES = 1024 * 1024;

type State =
  | { s: 'text' }
  | { s: 'prefix'; matched: number }
  | { s: 'nonce'; buf: string }
  | { s: 'id'; buf: string }
  | {
      s: 'payload';
      id: string;
      parts: Buffer[];
      size: number;
      oversized: boolean;
      bad: boolean;
      escPending: boolean;
      /** The payload is the JSON itself (its first byte is `{`), not base64; null before its first byte. */
      raw: boolean | null;
    };

const TOKEN_CHAR = /^[A-Za-z0-9_-]$/;

/** base64url, or standard base64 with its padding (the POSIX sh client sends `base64`'s own output). */
function isB64url(byte: number): boolean {
  return (
    (byte >= 0x30 && byte <= 0x39) ||
    (byte >= 0x41 && byte <= 0x5a) ||
    (byte >= 0x61 && byte <= 0x7a) ||
    byte === 0x2d ||
    byte === 0x5f ||
    byte === 0x2b ||
    byte === 0x2f ||
    byte === 0x3d
  );
}

/** One scanner per job stream; `push` returns the bytes that remain ordinary output. */
export class ChannelScanner {
  private state: State = { s: 'text' };

  constructor(
    private readonly nonce: string,
    private readonly onFrame: (frame: ChannelFrame) => void,
    private readonly maxFrameBytes = MAX_FRAME_BYTES,
  ) {}

  push(chunk: Buffer): Buffer {
    const out: Buffer[] = [];
    let i = 0;
    let textStart = 0;
    const flushText = (end: number) => {
      if (end > textStart) out.push(chunk.subarray(textStart, end));
    };
    while (i < chunk.length) {
      const st = this.state;
      switch (st.s) {
        case 'text': {
          const esc = chunk.indexOf(ESC, i);
          if (esc < 0) {
            i = chunk.length;
            break;
          }
          flushText(esc);
          textStart = esc;
          i = esc + 1;
          this.state = { s: 'prefix', matched: 1 };
          break;
        }
        case 'prefix': {
          if (chunk[i] === PREFIX[st.matched]) {
            st.matched++;
            i++;
            if (st.matched === PREFIX.length) this.state = { s: 'nonce', buf: '' };
          } else {
            // not a frame: the held prefix bytes are ordinary output
            this.abandon(out, chunk, textStart, i, PREFIX.subarray(0, st.matched));
            textStart = i;
          }
          break;
        }
        case 'nonce':
        case 'id': {
          const ch = String.fromCharCode(chunk[i]!);
          if (ch === ';') {
            if (st.s === 'nonce') {
              if (st.buf !== this.nonce) {
                // another job's (or a replayed) frame: leave it in the output untouched
                this.abandon(out, chunk, textStart, i, Buffer.from(`\x1b_paddock;${st.buf}`));
                textStart = i;
                break;
              }
              this.state = { s: 'id', buf: '' };
            } else {
              this.state = {
                s: 'payload',
                id: st.buf,
                parts: [],
                size: 0,
                oversized: false,
                bad: st.buf.length === 0,
                escPending: false,
                raw: null,
              };
            }
            i++;
          } else if (TOKEN_CHAR.test(ch) && st.buf.length < MAX_TOKEN) {
            st.buf += ch;
            i++;
          } else if (st.s === 'nonce') {
            this.abandon(out, chunk, textStart, i, Buffer.from(`\x1b_paddock;${st.buf}`));
            textStart = i;
          } else {
            // our nonce but a broken id: swallow the rest of the frame, report it unanswerable
            this.state = {
              s: 'payload',
              id: '',
              parts: [],
              size: 0,
              oversized: false,
              bad: true,
              escPending: false,
              raw: null,
            };
          }
          break;
        }
        case 'payload': {
          if (st.escPending) {
            st.escPending = false;
            if (chunk[i] === 0x5c) {
              i++;
              this.finish(st);
              this.state = { s: 'text' };
              textStart = i;
              break;
            }
            st.bad = true;
          }
          const esc = chunk.indexOf(ESC, i);
          const end = esc < 0 ? chunk.length : esc;
          if (st.raw === null && end > i) st.raw = chunk[i] === 0x7b;
          if (!st.bad && !st.raw) {
            for (let k = i; k < end; k++) {
              if (!isB64url(chunk[k]!)) {
                st.bad = true;
                break;
              }
            }
          }
          const n = end - i;
          if (!st.oversized) {
            if (st.size + n > this.maxFrameBytes) {
              st.oversized = true;
              st.parts = [];
            } else if (n > 0) st.parts.push(chunk.subarray(i, end));
          }
          st.size += n;
          i = end;
          if (esc >= 0) {
            st.escPending = true;
            i = esc + 1;
          }
          break;
        }
      }
    }
    // a pending prefix, nonce or id is held until the next chunk decides; a payload is the frame's
    if (this.state.s === 'text') flushText(chunk.length);
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** The stream ended: a pending partial frame start is ordinary output. */
  end(): Buffer {
    const st = this.state;
    this.state = { s: 'text' };
    if (st.s === 'prefix') return Buffer.from(PREFIX.subarray(0, st.matched));
    if (st.s === 'nonce') return Buffer.from(`\x1b_paddock;${st.buf}`);
    if (st.s === 'id' || st.s === 'payload') {
      this.onFrame({
        kind: 'malformed',
        id: st.s === 'payload' && st.id ? st.id : null,
        reason: 'the stream ended inside a frame',
      });
    }
    return Buffer.alloc(0);
  }

  /**
   * Gives up on a partial frame start: the bytes it consumed become output. Bytes of the
   * current chunk from `textStart` to `i` are still in the chunk; earlier ones (from a
   * previous chunk) are re-created from `held`.
   */
  private abandon(out: Buffer[], chunk: Buffer, textStart: number, i: number, held: Buffer): void {
    const inChunk = i - textStart;
    if (held.length > inChunk) out.push(held.subarray(0, held.length - inChunk));
    if (inChunk > 0) out.push(chunk.subarray(textStart, i));
    this.state = { s: 'text' };
  }

  private finish(st: Extract<State, { s: 'payload' }>): void {
    if (st.bad) {
      this.onFrame({
        kind: 'malformed',
        id: st.id || null,
        reason: 'the frame is not `id;base64url` (or `id;{JSON}`) text',
      });
    } else if (st.oversized) {
      this.onFrame({ kind: 'oversized', id: st.id });
    } else {
      this.onFrame({ kind: 'request', id: st.id, payload: Buffer.concat(st.parts).toString('latin1') });
    }
  }
}
