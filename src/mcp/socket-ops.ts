/**
 * The socket's `cli` operation: a one-shot CLI command (a tool call, an agent run, a launch)
 * that runs inside the server, so the server stays the one owner of computers, upstream servers
 * and schedules. After the welcome line the server streams frames, one JSON line each —
 * `{"stdout":…}`, `{"stderr":…}`, then `{"exit":N}` or `{"error":{…}}` — and closes. The client
 * may send `{"cancel":true}` (Ctrl-C); closing the connection cancels too.
 *
 * A client that stops reading is cut off by the socket's slow-reader bounds, so a peer that
 * never reads cannot grow the server's memory.
 */
import type { Socket } from 'node:net';
import { isPaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { guardSlowReader, type SlowReaderLimits } from '../shared/slow-reader.js';
import type { CliErrorFrame, CliFrame } from './socket-protocol.js';

/** Runs a CLI request inside the server; `write` streams what the person sees. */
export type CliRunner = (
  request: Record<string, unknown>,
  io: { write(stream: 'stdout' | 'stderr', text: string): void },
  signal: AbortSignal,
) => Promise<number>;

/** Serves one `cli` connection: runs the request, streams its output, ends with its exit code. */
export function serveCli(
  socket: Socket,
  request: Record<string, unknown>,
  run: CliRunner,
  logger: Logger,
  limits: SlowReaderLimits,
): void {
  const controller = new AbortController();
  const cancel = () => controller.abort();
  socket.once('close', cancel);
  // the client sends nothing but `{"cancel":true}` lines; anything else (or too much) is ignored
  let input = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    input = (input + chunk).slice(-4096);
    const lines = input.split('\n');
    input = lines.pop() ?? '';
    if (lines.some(isCancel)) cancel();
  });
  socket.resume();
  guardSlowReader(socket, limits, (drop) => logger.warn('server.cli_peer_dropped', { ...drop }));
  const send = (frame: CliFrame) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(frame)}\n`);
  };
  socket.write(`${JSON.stringify({ paddock: 1, ok: true, pid: process.pid })}\n`);
  const io = { write: (stream: 'stdout' | 'stderr', text: string) => send({ [stream]: text }) };
  run(request, io, controller.signal).then(
    (code) => {
      send({ exit: code });
      socket.end();
    },
    (e: unknown) => {
      send({ error: errorFrame(e) });
      socket.end();
    },
  );
}

function isCancel(line: string): boolean {
  try {
    return (JSON.parse(line) as { cancel?: unknown } | null)?.cancel === true;
  } catch {
    return false;
  }
}

function errorFrame(e: unknown): CliErrorFrame {
  if (isPaddockError(e))
    return { code: e.code, message: e.message, usage: (e as Error).name === 'UsageError' };
  return { code: 'INTERNAL', message: (e as Error)?.message ?? String(e), usage: false, unexpected: true };
}
