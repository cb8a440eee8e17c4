/**
 * One connected page: a bounded outgoing queue in front of its websocket.
 *
 * Messages are handed to the socket only while its send buffer is below a high-water mark;
 * the rest wait here. State messages (status, a job, the terminal list, the preview) carry a
 * key and replace their queued predecessor; terminal output for the same terminal is merged.
 * When the queue still grows past its bound (a page that stopped reading), everything queued
 * is dropped and, once the socket drains, the page gets a fresh snapshot marked `resync`.
 * Memory per socket is therefore bounded by the queue bound plus the high-water mark.
 */
import type { WebSocket } from 'ws';
import type { ServerMessage } from './protocol.js';

/** Limits of one page's queue. */
export interface ClientLimits {
  /** Bytes queued here before the queue is dropped for a resync. Default 1 MiB. */
  maxQueuedBytes: number;
  /** Bytes buffered in the socket before sends wait here. Default 256 KiB. */
  highWaterBytes: number;
  /** Largest merged terminal.output message, in characters. Default 64 Ki. */
  maxMergedChars: number;
}

export const DEFAULT_CLIENT_LIMITS: ClientLimits = {
  maxQueuedBytes: 1024 * 1024,
  highWaterBytes: 256 * 1024,
  maxMergedChars: 64 * 1024,
};

type TerminalOutput = Extract<ServerMessage, { type: 'terminal.output' }>;

interface Queued {
  key: string | null;
  /** Serialized message, or the terminal output still open for merging. */
  text: string | null;
  output: TerminalOutput | null;
  bytes: number;
}

/** Counters for diagnostics and tests. */
export interface ClientStats {
  queuedMessages: number;
  queuedBytes: number;
  sentMessages: number;
  resyncs: number;
}

export class DockClient {
  private readonly queue: Queued[] = [];
  private queuedBytes = 0;
  private resyncPending = false;
  private sentMessages = 0;
  private resyncs = 0;
  private flushing = false;

  constructor(
    readonly ws: WebSocket,
    private readonly makeSnapshot: () => ServerMessage,
    private readonly limits: ClientLimits = DEFAULT_CLIENT_LIMITS,
  ) {}

  /** Queues a message; `key` makes it replace a queued message with the same key. */
  send(message: ServerMessage, key?: string): void {
    if (this.resyncPending || this.ws.readyState !== this.ws.OPEN) return;
    if (message.type === 'terminal.output') this.queueOutput(message);
    else {
      const text = JSON.stringify(message);
      const existing = key ? this.queue.find((q) => q.key === key) : undefined;
      if (existing) {
        this.queuedBytes += text.length - existing.bytes;
        existing.text = text;
        existing.bytes = text.length;
      } else this.push({ key: key ?? null, text, output: null, bytes: text.length });
    }
    this.flush();
    if (this.queuedBytes > this.limits.maxQueuedBytes) {
      this.queue.length = 0;
      this.queuedBytes = 0;
      this.resyncPending = true;
      this.resyncs++;
    }
  }

  stats(): ClientStats {
    return {
      queuedMessages: this.queue.length,
      queuedBytes: this.queuedBytes,
      sentMessages: this.sentMessages,
      resyncs: this.resyncs,
    };
  }

  private queueOutput(message: TerminalOutput): void {
    const last = this.queue[this.queue.length - 1];
    const open = last?.output;
    if (
      open &&
      open.terminalId === message.terminalId &&
      open.data.length + message.data.length <= this.limits.maxMergedChars
    ) {
      open.data += message.data;
      open.cursor = message.cursor;
      open.gap ||= message.gap;
      last.bytes += message.data.length;
      this.queuedBytes += message.data.length;
      return;
    }
    this.push({ key: null, text: null, output: { ...message }, bytes: message.data.length + 128 });
  }

  private push(q: Queued): void {
    this.queue.push(q);
    this.queuedBytes += q.bytes;
  }

  /** Hands queued messages to the socket while its buffer is below the high-water mark. */
  private flush(): void {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.ws.readyState === this.ws.OPEN && this.ws.bufferedAmount < this.limits.highWaterBytes) {
        let next = this.queue.shift();
        if (!next) {
          if (!this.resyncPending) return;
          this.resyncPending = false;
          const text = JSON.stringify(this.makeSnapshot());
          next = { key: null, text, output: null, bytes: text.length };
        } else this.queuedBytes -= next.bytes;
        const text = next.text ?? JSON.stringify(next.output);
        this.sentMessages++;
        this.ws.send(text, (err) => {
          if (!err) this.flush();
        });
      }
    } finally {
      this.flushing = false;
    }
  }
}
