/**
 * WebMCP: the page registers the computer's tools with the browser's Web Model Context API
 * (`document.modelContext`; the polyfill when the browser has none), so an agent in the browser
 * can call them. Each call travels over the dock's websocket and runs on the server through the
 * gateway as the signed-in person (`via: webmcp`), audited like every other call. The
 * registration is replaced after every snapshot and ends when the page goes away.
 */
import { initializeWebMCPPolyfill } from '@mcp-b/webmcp-polyfill';
import type { DockWebMcpTool } from '../../dock/protocol.js';
import type { DockSocket } from './socket.js';

interface ModelContextLike {
  registerTool(
    tool: DockWebMcpTool & { execute(input: Record<string, unknown>): Promise<unknown> },
    options?: { signal?: AbortSignal },
  ): Promise<void> | void;
}

type CallResult = Record<string, unknown>;

/** The page's Web Model Context, installing the polyfill when the browser has none. */
function modelContext(): ModelContextLike | null {
  const fromDocument = () => (document as unknown as { modelContext?: ModelContextLike }).modelContext;
  if (!fromDocument()) {
    try {
      initializeWebMCPPolyfill();
    } catch {
      return null;
    }
  }
  return fromDocument() ?? null;
}

/** An error result in the shape the server sends, for calls the page could not deliver. */
function failed(code: string, message: string): CallResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ code, message }) }] };
}

export class WebMcpTools {
  private registration: AbortController | null = null;
  private registered = '';
  private readonly waiting = new Map<string, (result: CallResult) => void>();
  private next = 1;
  private readonly context = modelContext();

  constructor(private readonly socket: DockSocket) {
    addEventListener('pagehide', () => this.leave());
  }

  /** Asks the server for the computer's tools (after every snapshot). */
  refresh(): void {
    if (this.context) this.socket.send({ type: 'webmcp.list' });
  }

  /** Replaces the registered tools with these (nothing changes when they are the same). */
  async register(tools: DockWebMcpTool[]): Promise<void> {
    const context = this.context;
    if (!context) return;
    // every snapshot lists the tools again; re-registering the same ones would make them vanish
    // for a moment under an agent that is calling them
    const listed = JSON.stringify(tools);
    if (this.registration && listed === this.registered) return;
    this.registered = listed;
    this.unregister();
    const registration = new AbortController();
    this.registration = registration;
    for (const tool of tools) {
      if (registration.signal.aborted) return;
      try {
        await context.registerTool(
          { ...tool, execute: (input) => this.call(tool.name, input ?? {}) },
          { signal: registration.signal },
        );
      } catch (e) {
        if (!registration.signal.aborted) console.warn(`WebMCP: could not register ${tool.name}:`, e);
      }
    }
  }

  /** Hands a result from the server to the call waiting for it. */
  result(callId: string, result: CallResult): void {
    const resolve = this.waiting.get(callId);
    this.waiting.delete(callId);
    resolve?.(result);
  }

  /** The connection dropped: calls still waiting will never be answered. */
  disconnected(): void {
    for (const resolve of this.waiting.values())
      resolve(failed('CHANNEL_CLOSED', 'The connection to the Paddock server dropped; call the tool again.'));
    this.waiting.clear();
  }

  private unregister(): void {
    this.registration?.abort();
    this.registration = null;
  }

  /** Forgets the registration (the page is leaving). */
  private leave(): void {
    this.registered = '';
    this.unregister();
  }

  private async call(name: string, input: Record<string, unknown>): Promise<CallResult> {
    const callId = `w${this.next++}`;
    const answer = new Promise<CallResult>((resolve) => this.waiting.set(callId, resolve));
    const reply = await this.socket.request({ type: 'webmcp.call', callId, name, arguments: input });
    if (!reply.ok) {
      this.waiting.delete(callId);
      return failed(reply.code ?? 'INTERNAL', reply.message);
    }
    return answer;
  }
}
