/**
 * Bounded newline-delimited JSON: the framing of MCP over stdio and over Paddock's unix socket.
 * A line longer than the bound is never held in memory: it is dropped as it streams past, and the
 * sender gets a JSON-RPC error for it while the session carries on. Only `node:stream` is used,
 * so the stdio bridge can load this without the MCP SDK.
 */
import { Transform, type TransformCallback } from 'node:stream';

/** Largest inbound MCP message on stdio and on the socket (the same bound as an HTTP POST body). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** How much of a dropped line's start and end is kept to find its request id. */
const EDGE_BYTES = 512;

/** What is known about a line that was dropped for its size. */
export interface OversizedLine {
  /** Bytes of the line (without its newline), counted as it streamed past. */
  bytes: number;
  /** The request id found at the line's start or end, when there is one. */
  id: string | number | null;
}

/**
 * Passes complete lines (each with its `\n`) of at most `maxBytes`; drops longer ones and
 * reports each through `onOversized` once its end is seen (or the input ends).
 */
export class LineLimiter extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private dropping = false;
  private droppedBytes = 0;
  private head: Buffer = Buffer.alloc(0);
  private tail: Buffer = Buffer.alloc(0);

  constructor(
    private readonly maxBytes: number,
    private readonly onOversized: (line: OversizedLine) => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (this.dropping) this.skip(piece);
      else if (this.pendingBytes + piece.length > this.maxBytes) {
        this.startDropping();
        this.skip(piece);
      } else if (piece.length > 0) {
        this.pending.push(piece);
        this.pendingBytes += piece.length;
      }
      if (nl === -1) break;
      this.endLine();
      start = nl + 1;
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.dropping) this.endLine();
    else if (this.pendingBytes > 0) this.push(Buffer.concat([...this.pending, Buffer.from('\n')]));
    done();
  }

  private startDropping(): void {
    const kept = Buffer.concat(this.pending);
    this.head = kept.subarray(0, EDGE_BYTES);
    this.tail = kept.subarray(Math.max(0, kept.length - EDGE_BYTES));
    this.droppedBytes = kept.length;
    this.pending = [];
    this.pendingBytes = 0;
    this.dropping = true;
  }

  private skip(piece: Buffer): void {
    if (this.head.length < EDGE_BYTES)
      this.head = Buffer.concat([this.head, piece.subarray(0, EDGE_BYTES - this.head.length)]);
    const joined = piece.length >= EDGE_BYTES ? piece : Buffer.concat([this.tail, piece]);
    this.tail = joined.subarray(Math.max(0, joined.length - EDGE_BYTES));
    this.droppedBytes += piece.length;
  }

  private endLine(): void {
    if (this.dropping) {
      const id = requestIdOf(this.head.toString('utf8'), this.tail.toString('utf8'));
      this.dropping = false;
      this.head = Buffer.alloc(0);
      this.tail = Buffer.alloc(0);
      this.onOversized({ bytes: this.droppedBytes, id });
      return;
    }
    if (this.pendingBytes === 0) return;
    this.pending.push(Buffer.from('\n'));
    this.push(Buffer.concat(this.pending));
    this.pending = [];
    this.pendingBytes = 0;
  }
}

const ID_VALUE = String.raw`(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")`;
const ID_AT_END = new RegExp(String.raw`"id"\s*:\s*${ID_VALUE}\s*}\s*$`);
const ID_AT_START = new RegExp(String.raw`^\s*{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID_VALUE}`);

/**
 * The id of a JSON-RPC request from the start or end of its text, where serializers put it
 * (`{"jsonrpc":"2.0","id":1,…}` or `{…,"jsonrpc":"2.0","id":1}`), so the error answers the
 * request the client waits for; null when neither edge names one.
 */
export function requestIdOf(head: string, tail: string): string | number | null {
  const m = ID_AT_END.exec(tail) ?? ID_AT_START.exec(head);
  if (!m?.[1]) return null;
  try {
    const id: unknown = JSON.parse(m[1]);
    return typeof id === 'number' || typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/** The JSON-RPC error line that answers a dropped message. */
export function oversizedReply(line: OversizedLine, maxBytes: number): string {
  return `${JSON.stringify({
    jsonrpc: '2.0',
    id: line.id,
    error: {
      code: -32600,
      message: `Message of ${line.bytes} bytes is over the limit of ${maxBytes} bytes and was dropped; send smaller messages (write large files in parts). The session is still open.`,
    },
  })}\n`;
}
