import type { Tool as SdkTool } from '@modelcontextprotocol/client';
import { raceAbort, sleep } from '../shared/abort.js';
import type { Live, UpstreamToolDef } from './connection-types.js';
import { isAlive, processTree, signalAll } from './process-tree.js';

// ref'd on purpose: close() must finish even when nothing else keeps the process alive

/**
 * Shuts one connection down: ends an HTTP session, closes the client (a stdio server's stdin
 * is closed and the SDK escalates on its own), SIGTERMs the server's process tree after
 * `graceMs` and SIGKILLs it after twice that; helpers left behind by an exited parent get the
 * same grace and are then killed. Bounded by about `2 × graceMs` plus the SDK's own waits.
 */
export async function shutdown(live: Live, graceMs: number): Promise<void> {
  live.closing = true;
  const pid = live.upstream.pid();
  const current = pid ? processTree(pid) : [];
  const tree = [...current, ...live.tree.filter((r) => !current.some((c) => c.pid === r.pid))];
  const term = setTimeout(() => signalAll(tree, 'SIGTERM'), graceMs);
  const kill = setTimeout(() => signalAll(tree, 'SIGKILL'), 2 * graceMs);
  try {
    await Promise.race([live.upstream.terminate().catch(() => {}), sleep(graceMs)]);
    await live.client.close().catch(() => {});
    await live.upstream.transport.close().catch(() => {});
    const deadline = Date.now() + graceMs;
    while (tree.some(isAlive) && Date.now() < deadline) await sleep(25);
    signalAll(tree, 'SIGKILL');
  } finally {
    clearTimeout(term);
    clearTimeout(kill);
  }
}

/** The fields of a listed tool that Paddock keeps. */
export function toDef(t: SdkTool): UpstreamToolDef {
  return {
    name: t.name,
    ...(t.title !== undefined ? { title: t.title } : {}),
    ...(t.description !== undefined ? { description: t.description } : {}),
    inputSchema: t.inputSchema as Record<string, unknown>,
    ...(t.outputSchema ? { outputSchema: t.outputSchema as Record<string, unknown> } : {}),
    ...(t.annotations ? { annotations: t.annotations as Record<string, unknown> } : {}),
  };
}

/** Resolves with `promise`, or rejects at the deadline or when `signal` aborts. */
export function raceDeadline<T>(
  promise: Promise<T>,
  deadline: number,
  signal: AbortSignal | undefined,
  onLate: () => Error,
): Promise<T> {
  // a timer of its own (not AbortSignal.timeout): waiting for the deadline keeps the process alive
  const late = new AbortController();
  const timer = setTimeout(() => late.abort(), Math.max(0, Math.min(deadline - Date.now(), 2_147_483_647)));
  const stop = signal ? AbortSignal.any([signal, late.signal]) : late.signal;
  return raceAbort(promise, stop, { error: onLate }).finally(() => clearTimeout(timer));
}
