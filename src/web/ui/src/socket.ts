/**
 * The page's end of `/dock/ws`: reconnects with backoff, hands every server message to one
 * handler, and correlates replies to requests.
 */
import type { ClientMessage, ServerMessage } from '../../dock/protocol.js';

export type Connection = 'connecting' | 'live' | 'reconnecting' | 'signed-out';

type Reply = Extract<ServerMessage, { type: 'reply' }>;
type Outgoing = ClientMessage extends infer M
  ? M extends { requestId?: string }
    ? Omit<M, 'requestId'>
    : never
  : never;

export interface SocketHandlers {
  message(msg: ServerMessage): void;
  connection(state: Connection): void;
  /** A failed request without a waiting caller (e.g. a keystroke to a stale terminal). */
  error(reply: Reply): void;
}

export class DockSocket {
  private ws: WebSocket | null = null;
  private attempt = 0;
  private nextId = 1;
  private readonly pending = new Map<string, (r: Reply) => void>();
  private closed = false;

  constructor(private readonly handlers: SocketHandlers) {}

  connect(): void {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(`${scheme}://${location.host}/dock/ws`);
    this.ws = ws;
    this.handlers.connection(this.attempt === 0 ? 'connecting' : 'reconnecting');
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.handlers.connection('live');
    };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(String(ev.data)) as ServerMessage;
      if (msg.type === 'reply') {
        const waiter = msg.requestId ? this.pending.get(msg.requestId) : undefined;
        if (waiter && msg.requestId) {
          this.pending.delete(msg.requestId);
          waiter(msg);
        } else if (!msg.ok) this.handlers.error(msg);
        return;
      }
      this.handlers.message(msg);
    };
    ws.onclose = () => {
      this.ws = null;
      for (const waiter of this.pending.values()) {
        waiter({
          type: 'reply',
          requestId: null,
          request: '',
          ok: false,
          code: 'CHANNEL_CLOSED',
          message: 'The connection to the server dropped; try again.',
        });
      }
      this.pending.clear();
      if (this.closed) return;
      if (!opened) void this.checkSignedIn();
      else this.retry();
    };
  }

  /** Sends a message without waiting for its outcome (errors reach `handlers.error`). */
  send(msg: Outgoing): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  /** Sends a request and resolves with the server's reply. */
  request(msg: Outgoing): Promise<Reply> {
    const requestId = `r${this.nextId++}`;
    return new Promise((resolve) => {
      if (this.ws?.readyState !== WebSocket.OPEN) {
        resolve({
          type: 'reply',
          requestId,
          request: msg.type,
          ok: false,
          code: 'CHANNEL_CLOSED',
          message: 'Not connected to the server; wait for the connection to come back.',
        });
        return;
      }
      this.pending.set(requestId, resolve);
      this.ws.send(JSON.stringify({ ...msg, requestId }));
    });
  }

  private retry(): void {
    this.attempt++;
    this.handlers.connection('reconnecting');
    const delayMs = Math.min(5000, 250 * 2 ** Math.min(this.attempt, 5));
    setTimeout(() => this.connect(), delayMs);
  }

  /** A refused upgrade has no status in the browser; ask the page URL whether we are signed out. */
  private async checkSignedIn(): Promise<void> {
    try {
      const res = await fetch('/', { method: 'HEAD', cache: 'no-store', credentials: 'same-origin' });
      if (res.status === 401) {
        this.handlers.connection('signed-out');
        return;
      }
    } catch {
      // the server is down: keep retrying
    }
    this.retry();
  }
}
