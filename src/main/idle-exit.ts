/**
 * A server that `paddock mcp` started in the background ends itself once nothing uses it: no
 * MCP client, no dock page and no booting or running computer, for `mcp.idleExitSeconds`. A
 * server a person started with `paddock serve` never does.
 */

/** What the server counts to tell whether it is used. */
export interface ServerUse {
  /** Open MCP sessions (stdio bridges and HTTP clients). */
  sessions(): number;
  /** Connected dock pages. */
  pages(): number;
  /** Computers booting or running. */
  activeComputers(): number;
}

/** Starts the watch; `stop` is called once, after `idleMs` of no use. Returns the watch's end. */
export function exitWhenIdle(use: ServerUse, idleMs: number, stop: () => void): () => void {
  let idleSince: number | null = null;
  const every = Math.min(10_000, Math.max(250, Math.floor(idleMs / 10)));
  const timer = setInterval(() => {
    const used = use.sessions() > 0 || use.pages() > 0 || use.activeComputers() > 0;
    if (used) {
      idleSince = null;
      return;
    }
    idleSince ??= Date.now();
    if (Date.now() - idleSince < idleMs) return;
    clearInterval(timer);
    stop();
  }, every);
  timer.unref();
  return () => clearInterval(timer);
}
