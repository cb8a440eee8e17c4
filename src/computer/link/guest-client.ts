/**
 * The host end of the guest link: calls with replies, events, and data by stream.
 * Everything from the guest is validated (a process in the computer may have tampered with the
 * agent); a malformed message ends the link. When the link ends, every pending call fails at
 * once with NOT_RUNNING and later calls fail immediately: nothing waits on a dead guest.
 */
import type { Readable, Writable } from 'node:stream';
import {
  encodeFrame,
  encodeFrameHeader,
  type Frame,
  FrameKind,
  type FrameKindValue,
} from '../../guest/frames.js';
import {
  type CallArgs,
  type CallOp,
  type CallResult,
  callSchemas,
  type GuestEvent,
  guestEventSchema,
  guestReplySchema,
  type TellOp,
} from '../../guest/protocol.js';
import { PaddockError } from '../../shared/errors.js';
import { readFrames } from './frame-reader.js';

/** Default bound of one call to the guest. */
export const DEFAULT_GUEST_CALL_TIMEOUT_MS = 30_000;

/** Receivers of what the guest sends unprompted. */
export interface GuestHandlers {
  onEvent(event: Exclude<GuestEvent, { t: 'hello' }>): void;
  onHello(event: Extract<GuestEvent, { t: 'hello' }>): void;
  /** Bytes of a stream; `payload` is valid only during the call (copy what is kept). */
  onData(stream: number, fd: number, payload: Buffer): void;
  onEnd(stream: number, fd: number): void;
  /** Flow-control credit the guest granted on a stream (relayed connections). */
  onWindow?(stream: number, fd: number, bytes: number): void;
  /** The link broke (protocol error); the owner should tear the computer down. */
  onBroken(reason: string): void;
}

interface Pending {
  op: CallOp;
  resolve(value: unknown, attachment: Buffer | undefined): void;
  reject(error: PaddockError): void;
  timer: NodeJS.Timeout;
}

/** Options of one call. */
export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Raw bytes sent with the call (e.g. the content of fs.write). */
  attachment?: Buffer;
}

/** A result, with the raw bytes the guest attached to its reply (e.g. the data of fs.read). */
export type WithAttachment<T> = T & { attachment?: Buffer };

/** RPC over the frame link. */
export class GuestClient {
  private readonly pending = new Map<number, Pending>();
  /** Attachments of replies that have not arrived yet, by call id. */
  private readonly attachments = new Map<number, Buffer>();
  private nextId = 1;
  private failure: PaddockError | null = null;

  constructor(
    fromGuest: Readable,
    private readonly toGuest: Writable,
    private readonly handlers: GuestHandlers,
  ) {
    // a payload is valid only during onFrame (see frame-reader.ts): what is kept is copied
    readFrames(
      fromGuest,
      (frame) => {
        if (!this.failure) this.onFrame(frame);
      },
      (reason) => {
        if (!this.failure) this.broken(reason);
      },
    );
  }

  /** Whether the link still works. */
  get alive(): boolean {
    return this.failure === null;
  }

  /** Calls the guest. Rejects with NOT_RUNNING when the link is or becomes dead. */
  call<Op extends CallOp>(
    op: Op,
    args: CallArgs<Op>,
    options: CallOptions = {},
  ): Promise<WithAttachment<CallResult<Op>>> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    const timeoutMs = options.timeoutMs ?? DEFAULT_GUEST_CALL_TIMEOUT_MS;
    return new Promise<WithAttachment<CallResult<Op>>>((resolve, reject) => {
      const onAbort = () => {
        const p = this.pending.get(id);
        if (!p) return;
        clearTimeout(p.timer);
        this.pending.delete(id);
        reject(
          new PaddockError(
            'TIMEOUT',
            `The computer did not answer "${op}" before the call was cancelled; retry.`,
          ),
        );
      };
      const timer = setTimeout(() => {
        this.pending.delete(id);
        options.signal?.removeEventListener('abort', onAbort);
        reject(
          new PaddockError(
            'TIMEOUT',
            `The computer did not answer "${op}" within ${timeoutMs} ms; check get_computer_status and retry.`,
          ),
        );
      }, timeoutMs);
      this.pending.set(id, {
        op,
        resolve: (v, attachment) => {
          options.signal?.removeEventListener('abort', onAbort);
          const value = v as WithAttachment<CallResult<Op>>;
          if (attachment) value.attachment = attachment;
          resolve(value);
        },
        reject: (e) => {
          options.signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
        timer,
      });
      options.signal?.addEventListener('abort', onAbort, { once: true });
      if (options.attachment) {
        // header and bytes as two writes: a 64 KiB write_file is not copied into one buffer first
        this.toGuest.write(encodeFrameHeader(FrameKind.Attachment, id, 0, options.attachment.length));
        this.toGuest.write(options.attachment);
      }
      this.toGuest.write(
        encodeFrame(FrameKind.Control, 0, 0, Buffer.from(JSON.stringify({ t: 'call', id, op, args }))),
      );
    });
  }

  /**
   * Sends a one-way call: the guest runs it and sends nothing back (a failure becomes a guest
   * log line). False when the link is dead.
   */
  tell<Op extends TellOp>(op: Op, args: CallArgs<Op>): boolean {
    if (this.failure) return false;
    this.toGuest.write(
      encodeFrame(FrameKind.Control, 0, 0, Buffer.from(JSON.stringify({ t: 'tell', op, args }))),
    );
    return true;
  }

  /**
   * Sends a stream frame to the guest (bytes, end or credit of a relayed connection). False when
   * the link is dead or its buffer is full (the caller's own flow control bounds what it sends).
   */
  sendFrame(kind: FrameKindValue, stream: number, fd: number, payload: Buffer): boolean {
    if (this.failure) return false;
    if (payload.length < 4096) return this.toGuest.write(encodeFrame(kind, stream, fd, payload));
    // large data goes as header + payload in one writev, without copying the payload
    this.toGuest.cork();
    this.toGuest.write(encodeFrameHeader(kind, stream, fd, payload.length));
    const ok = this.toGuest.write(payload);
    this.toGuest.uncork();
    return ok;
  }

  /** Ends the link: pending and future calls fail with `error`. */
  fail(error: PaddockError): void {
    if (this.failure) return;
    this.failure = error;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(error);
    }
  }

  private broken(reason: string): void {
    this.fail(
      new PaddockError(
        'NOT_RUNNING',
        `The computer's guest agent broke the protocol (${reason}); relaunch the computer.`,
      ),
    );
    this.handlers.onBroken(reason);
  }

  private onFrame(frame: Frame): void {
    switch (frame.kind) {
      case FrameKind.Data:
        this.handlers.onData(frame.stream, frame.fd, frame.payload);
        return;
      case FrameKind.End:
        this.handlers.onEnd(frame.stream, frame.fd);
        return;
      case FrameKind.Window:
        if (frame.payload.length === 4)
          this.handlers.onWindow?.(frame.stream, frame.fd, frame.payload.readUInt32BE(0));
        return;
      case FrameKind.Attachment:
        if (this.pending.has(frame.stream)) this.attachments.set(frame.stream, Buffer.from(frame.payload));
        return;
      case FrameKind.Control:
        this.onControl(frame.payload);
        return;
    }
  }

  private onControl(payload: Buffer): void {
    let json: unknown;
    try {
      json = JSON.parse(payload.toString('utf8'));
    } catch {
      this.broken('control frame is not JSON');
      return;
    }
    const parsed = parseGuestMessage(json);
    if (!parsed.success) {
      this.broken(`unexpected message: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      return;
    }
    const msg = parsed.data;
    if (msg.t === 'hello') {
      this.handlers.onHello(msg);
      return;
    }
    if (msg.t !== 'reply') {
      this.handlers.onEvent(msg);
      return;
    }
    const p = this.pending.get(msg.id);
    const attachment = this.attachments.get(msg.id);
    this.attachments.delete(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (!msg.ok) {
      p.reject(new PaddockError(msg.error.code, msg.error.message, msg.error.details ?? {}));
      return;
    }
    const result = callSchemas[p.op].result.safeParse(msg.value);
    if (!result.success) {
      p.reject(
        new PaddockError(
          'INTERNAL',
          `The computer answered "${p.op}" with an invalid result; relaunch the computer.`,
        ),
      );
      this.broken(`invalid result for ${p.op}`);
      return;
    }
    p.resolve(result.data, attachment);
  }
}

const [replyOk, replyError] = guestReplySchema.options;

/**
 * Checks a control message against the protocol's schemas, choosing the member by its `t` (and
 * a reply's `ok`) first: a plain union tries the members in turn and builds the issues of each
 * one that fails, a tenth of a millisecond for every event the guest sends.
 */
export function parseGuestMessage(json: unknown) {
  const t = (json as { t?: unknown } | null)?.t;
  if (t !== 'reply') return guestEventSchema.safeParse(json);
  return (json as { ok?: unknown }).ok === true ? replyOk.safeParse(json) : replyError.safeParse(json);
}
