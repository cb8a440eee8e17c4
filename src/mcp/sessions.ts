import { OWNER, type Principal, principalKey, principalName } from '../shared/principal.js';
import type { CallerContext, ComputerRef } from '../tools/tool.js';
import type { SessionSummary } from './socket-protocol.js';

/** An MCP session as the rest of the server sees it when it ends. */
export interface EndedSession {
  /** The session's caller: `mcp:<session id>` (or `mcp:<client>:<session id>` for an OAuth client). */
  caller: string;
  computer: ComputerRef;
}

/**
 * The open MCP sessions of the server, whatever their transport (unix socket or Streamable
 * HTTP): what `paddock status` lists, and the one place that tells the computer service when a
 * session ends (its private computer can then be released).
 */
export class McpSessions {
  private readonly open = new Map<string, SessionSummary & { ref: ComputerRef; caller: string }>();

  constructor(private readonly onEnd: (session: EndedSession) => void = () => {}) {}

  /**
   * Registers an opened session of `principal` (the owner by default) whose calls are made as
   * `caller` (`mcp:<id>` by default); the returned function ends it (idempotent).
   */
  add(
    id: string,
    transport: SessionSummary['transport'],
    ref: ComputerRef,
    principal: Principal = OWNER,
    caller = `mcp:${id}`,
  ): () => void {
    this.open.set(id, {
      id,
      transport,
      computer: ref.kind === 'named' ? ref.name : 'private',
      openedAt: new Date().toISOString(),
      principal: principalKey(principal),
      principalName: principalName(principal),
      ref,
      caller,
    });
    return () => {
      const session = this.open.get(id);
      if (!session) return;
      this.open.delete(id);
      this.onEnd({ caller: session.caller, computer: session.ref });
    };
  }

  /** Records the client's name once its initialize arrived. */
  setClient(id: string, client: string): void {
    const session = this.open.get(id);
    if (session) session.client = client;
  }

  list(): SessionSummary[] {
    return [...this.open.values()].map(({ ref: _ref, caller: _caller, ...summary }) => summary);
  }

  /** Open sessions per computer, keyed by `keyOf` of each session's computer. */
  countByComputer(keyOf: (ref: ComputerRef) => string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { ref } of this.open.values()) counts.set(keyOf(ref), (counts.get(keyOf(ref)) ?? 0) + 1);
    return counts;
  }

  get size(): number {
    return this.open.size;
  }
}

/**
 * The computer a session acts on: the named one it asked for, else a private one owned by
 * the session (its caller, `mcp:<id>` by default).
 */
export function sessionComputer(id: string, name?: string, caller = `mcp:${id}`): ComputerRef {
  return name ? { kind: 'named', name } : { kind: 'private', owner: caller };
}

/** The caller context of every call in one MCP session (of the owner unless `principal` says otherwise). */
export function sessionCaller(
  id: string,
  computer: ComputerRef,
  principal: Principal = OWNER,
  caller = `mcp:${id}`,
): CallerContext {
  return { caller, principal, via: 'direct', attended: true, computer };
}
