/**
 * Binary framing of the host ↔ guest agent link (both directions, over the agent's stdio).
 *
 * Every frame is `[u32 length][u8 kind][u32 stream][u8 fd][payload]`, big-endian, where
 * `length` counts everything after itself. Control frames carry one JSON message (see
 * protocol.ts); data frames carry raw bytes for one fd of one stream, so output is
 * binary-safe and never re-encoded. This file is shared by the host and the guest: it imports
 * nothing but Node built-ins.
 */

/** Bumped on incompatible changes; the host refuses an agent that speaks another version. */
export const PROTOCOL_VERSION = 1;

/** The calls the host may send one way, without a reply (see `HostTell` in protocol.ts). */
export const TELL_OPS = ['channel.reply'] as const;

/** What a frame carries. New kinds may be added; unknown kinds are a protocol error. */
export const FrameKind = {
  /** One JSON control message (calls, replies, events). Stream and fd are 0. */
  Control: 0,
  /** Raw bytes of `fd` on `stream`. */
  Data: 1,
  /** `fd` on `stream` has ended (EOF); no more data frames follow for it. */
  End: 2,
  /** Flow-control credit for `stream`/`fd`: payload is a u32 byte count. */
  Window: 3,
  /**
   * Raw bytes that belong to the call (host → guest) or reply (guest → host) whose id is
   * `stream`; sent immediately before that control frame, so file contents never go through
   * base64 and JSON.
   */
  Attachment: 4,
} as const;

export type FrameKindValue = (typeof FrameKind)[keyof typeof FrameKind];

/** Fds inside a stream (a job uses Stdout and Stderr; a PTY or TCP relay uses Stdin/Stdout). */
export const Fd = { Stdin: 0, Stdout: 1, Stderr: 2 } as const;

/** Bytes before the payload: length (4) + kind (1) + stream (4) + fd (1). */
export const FRAME_HEADER_BYTES = 10;

/** Largest payload either side accepts; a bigger frame is a protocol error. */
export const MAX_FRAME_PAYLOAD_BYTES = 8 * 1024 * 1024;

/** One decoded frame. `payload` may share memory with the decoder's input chunk. */
export interface Frame {
  kind: FrameKindValue;
  /** The multiplexed stream: a job, a PTY, a relayed connection, or a call's id for attachments. */
  stream: number;
  /** Which of the stream's byte flows (Fd). */
  fd: number;
  payload: Buffer;
}

/** The header of a frame whose payload has `payloadBytes` bytes. */
export function encodeFrameHeader(
  kind: FrameKindValue,
  stream: number,
  fd: number,
  payloadBytes: number,
): Buffer {
  if (payloadBytes > MAX_FRAME_PAYLOAD_BYTES) {
    throw new RangeError(`frame payload of ${payloadBytes} bytes exceeds ${MAX_FRAME_PAYLOAD_BYTES}`);
  }
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt32BE(payloadBytes + FRAME_HEADER_BYTES - 4, 0);
  header.writeUInt8(kind, 4);
  header.writeUInt32BE(stream >>> 0, 5);
  header.writeUInt8(fd, 9);
  return header;
}

/** A whole frame in one buffer (for small frames; large data is better written as header + payload). */
export function encodeFrame(kind: FrameKindValue, stream: number, fd: number, payload: Buffer): Buffer {
  return Buffer.concat([encodeFrameHeader(kind, stream, fd, payload.length), payload]);
}

const KNOWN_KINDS = new Set<number>(Object.values(FrameKind));

/**
 * Incremental decoder: feed chunks as they arrive, get whole frames back. Keeps at most one
 * partial frame buffered and never concatenates more than once per frame. Throws on a frame
 * that is too large or of an unknown kind (the link is then unusable).
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;

  /** Decodes every complete frame in the data received so far. */
  push(chunk: Buffer): Frame[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.bufferedBytes += chunk.length;
    }
    const frames: Frame[] = [];
    for (;;) {
      if (this.bufferedBytes < FRAME_HEADER_BYTES) return frames;
      const head = this.peek(FRAME_HEADER_BYTES);
      const length = head.readUInt32BE(0);
      const kind = head.readUInt8(4);
      const payloadBytes = length + 4 - FRAME_HEADER_BYTES;
      if (payloadBytes < 0 || payloadBytes > MAX_FRAME_PAYLOAD_BYTES) {
        throw new RangeError(`received a frame with an invalid length (${length})`);
      }
      if (!KNOWN_KINDS.has(kind)) throw new RangeError(`received a frame of unknown kind ${kind}`);
      const total = FRAME_HEADER_BYTES + payloadBytes;
      if (this.bufferedBytes < total) return frames;
      const whole = this.take(total);
      frames.push({
        kind: kind as FrameKindValue,
        stream: whole.readUInt32BE(5),
        fd: whole.readUInt8(9),
        payload: whole.subarray(FRAME_HEADER_BYTES),
      });
    }
  }

  /** Bytes held for an incomplete frame. */
  get pendingBytes(): number {
    return this.bufferedBytes;
  }

  private peek(bytes: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= bytes) return first;
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined;
  }

  private take(bytes: number): Buffer {
    let first = this.chunks[0]!;
    if (first.length < bytes) {
      first = Buffer.concat(this.chunks);
      this.chunks = [first];
    }
    const out = first.subarray(0, bytes);
    if (first.length === bytes) this.chunks.shift();
    else this.chunks[0] = first.subarray(bytes);
    this.bufferedBytes -= bytes;
    return out;
  }
}
