/**
 * The host's reader of the guest's frames, built not to make garbage per read.
 *
 * Why: a job that floods its stdout arrives as one read of up to 64 KiB after another. With a
 * fresh Buffer per read (what a stream's `data` event gives) each read is external memory that V8
 * frees only at its next full collection, which it starts after about 64 MiB of such memory: the
 * server's RSS grew by 68–80 MiB per flood, however little it kept. Here the bytes land in one
 * buffer reused for every read (a socket's `onread`), whole frames are handed on from it, and
 * only a frame cut by the end of a read is copied, into a reassembly buffer that is reused too.
 *
 * A frame's payload is therefore valid only during the callback: a consumer that keeps it copies
 * it (jobs and terminals copy into their retention; attachments and relayed bytes are copied).
 *
 * Backpressure: frames are handled synchronously as they are read, so the kernel's pipe is the
 * only buffer between the guest and the host's retention. When the host is slower, the guest's
 * writes to the pipe block, and the guest pauses the job's (or PTY's) output in turn: the
 * writing program waits; nothing is dropped or queued on the host.
 *
 * The reused read buffer needs the socket's handle (an undocumented field, `_handle`): a new socket
 * takes it over with `onread`, after what the first one had already read is framed; any other
 * readable is read through its `data` events, with the same framing.
 */
import { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import {
  FRAME_HEADER_BYTES,
  type Frame,
  FrameKind,
  type FrameKindValue,
  MAX_FRAME_PAYLOAD_BYTES,
} from '../../guest/frames.js';

/** Bytes of the reused read buffer (the most one read of a pipe returns). */
const READ_BUFFER_BYTES = 64 * 1024;
/** A reassembly buffer grown past this is let go once its frame is whole. */
const KEEP_REASSEMBLY_BYTES = 256 * 1024;

const KNOWN_KINDS = new Set<number>(Object.values(FrameKind));

/** Frames from a stream of chunks; payloads point into the chunk or the reassembly buffer. */
export class FrameAssembler {
  private pending: Buffer = Buffer.allocUnsafeSlow(FRAME_HEADER_BYTES);
  private pendingBytes = 0;

  /** Hands every whole frame of `chunk` (and of what came before it) to `onFrame`; throws on a malformed frame. */
  push(chunk: Buffer, onFrame: (frame: Frame) => void): void {
    let at = 0;
    if (this.pendingBytes > 0) {
      at = this.fill(chunk, 0, FRAME_HEADER_BYTES);
      if (this.pendingBytes < FRAME_HEADER_BYTES) return;
      const total = frameBytes(this.pending, 0);
      at = this.fill(chunk, at, total);
      if (this.pendingBytes < total) return;
      const whole = this.pending.subarray(0, total);
      this.pendingBytes = 0;
      if (this.pending.length > KEEP_REASSEMBLY_BYTES)
        this.pending = Buffer.allocUnsafeSlow(FRAME_HEADER_BYTES);
      onFrame(frameAt(whole, 0, total));
    }
    while (chunk.length - at >= FRAME_HEADER_BYTES) {
      const total = frameBytes(chunk, at);
      if (chunk.length - at < total) break;
      onFrame(frameAt(chunk, at, total));
      at += total;
    }
    if (at < chunk.length) this.fill(chunk, at, chunk.length - at);
  }

  /** Bytes held for a frame not yet whole. */
  get heldBytes(): number {
    return this.pendingBytes;
  }

  /** Copies from `chunk` at `from` until `pending` holds `upTo` bytes (or the chunk ends); returns where it stopped. */
  private fill(chunk: Buffer, from: number, upTo: number): number {
    const take = Math.min(upTo - this.pendingBytes, chunk.length - from);
    if (take <= 0) return from;
    if (this.pending.length < this.pendingBytes + take) {
      const grown = Buffer.allocUnsafeSlow(Math.max(upTo, this.pendingBytes + take));
      this.pending.copy(grown, 0, 0, this.pendingBytes);
      this.pending = grown;
    }
    chunk.copy(this.pending, this.pendingBytes, from, from + take);
    this.pendingBytes += take;
    return from + take;
  }
}

/** The whole length of the frame whose header starts at `at`; throws on an invalid one. */
function frameBytes(bytes: Buffer, at: number): number {
  const length = bytes.readUInt32BE(at);
  const kind = bytes.readUInt8(at + 4);
  const payloadBytes = length + 4 - FRAME_HEADER_BYTES;
  if (payloadBytes < 0 || payloadBytes > MAX_FRAME_PAYLOAD_BYTES) {
    throw new RangeError(`received a frame with an invalid length (${length})`);
  }
  if (!KNOWN_KINDS.has(kind)) throw new RangeError(`received a frame of unknown kind ${kind}`);
  return FRAME_HEADER_BYTES + payloadBytes;
}

function frameAt(bytes: Buffer, at: number, total: number): Frame {
  return {
    kind: bytes.readUInt8(at + 4) as FrameKindValue,
    stream: bytes.readUInt32BE(at + 5),
    fd: bytes.readUInt8(at + 9),
    payload: bytes.subarray(at + FRAME_HEADER_BYTES, at + total),
  };
}

/** The socket's handle, when nobody consumes the socket yet (so its reads can be taken over). */
function handleOf(source: Readable): object | null {
  if (!(source instanceof Socket) || source.readableFlowing === true) return null;
  const handle = (source as unknown as { _handle?: { useUserBuffer?: unknown } | null })._handle;
  return handle && typeof handle.useUserBuffer === 'function' ? handle : null;
}

/**
 * Reads frames from `source` until it ends, each handed to `onFrame` (its payload valid during
 * the call). A malformed frame stops the framing: `onBroken` hears why, once.
 */
export function readFrames(
  source: Readable,
  onFrame: (frame: Frame) => void,
  onBroken: (reason: string) => void,
): void {
  const assembler = new FrameAssembler();
  let broken = false;
  const take = (chunk: Buffer) => {
    if (broken) return;
    try {
      assembler.push(chunk, onFrame);
    } catch (e) {
      broken = true;
      onBroken(`malformed frame: ${(e as Error).message}`);
    }
  };
  const handle = handleOf(source);
  if (!handle) {
    source.on('data', take);
    return;
  }
  // what the socket read before it was taken over (a socket starts reading when it is made)
  const early = source.read() as Buffer | null;
  const buffer = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
  const reader = new Socket({
    handle,
    readable: true,
    writable: false,
    onread: {
      buffer,
      callback: (bytes: number) => {
        take(buffer.subarray(0, bytes));
        return true;
      },
    },
  } as ConstructorParameters<typeof Socket>[0]);
  reader.on('error', () => undefined);
  if (early) take(early);
  reader.resume();
}
