/**
 * Where an acting command runs: inside the running server of the data directory, over its unix
 * socket (op `cli`), so that server stays the one owner of computers, upstream servers and
 * schedules; with no server running, on a Paddock built for this command alone (it ends with
 * the command). The output and the exit code are the same either way.
 */
import type { Socket } from 'node:net';
import { locateConfig } from '../config/locate.js';
import { instancePaths } from '../mcp/instance.js';
import { knock } from '../mcp/socket-client.js';
import type { CliFrame } from '../mcp/socket-protocol.js';
import { PaddockError } from '../shared/errors.js';
// type-only: the acts (and the server graph they reach) load only when no server runs
import type { ActIo, CliAct } from './acts.js';
import { UsageError } from './args.js';

export interface RunActOptions {
  io?: ActIo;
  /** Ctrl-C cancels the act (an agent run) instead of ending the process at once. */
  cancellable?: boolean;
}

/** The process's own stdout and stderr. */
const PROCESS_IO: ActIo = {
  write: (stream, text) => {
    process[stream].write(text);
  },
};

/** Runs `act` in the running server, or locally when none runs; returns the exit code. */
export async function runAct(
  values: Record<string, unknown>,
  act: CliAct,
  options: RunActOptions = {},
): Promise<number> {
  const io = options.io ?? PROCESS_IO;
  const location = locateConfig(typeof values.config === 'string' ? { configPath: values.config } : {});
  const paths = instancePaths(location.dataDir);
  // Ctrl-C is taken from the start: the server may begin the act (and a model call) before its
  // answer to the opening line arrives here, and a cancel made meanwhile is sent once it does.
  return withCancel(options.cancellable, async (signal) => {
    const attempt = await knock(paths, {
      op: 'cli',
      config: { file: location.file ?? null, projectDir: location.projectDir },
      cli: act,
    });
    if (attempt.kind === 'absent') {
      if (act.command === 'tools.list') {
        const { listToolsLocally } = await import('./tools-catalog.js');
        return listToolsLocally(values, act.json, io);
      }
      const [{ performAct }, { withPaddock }] = await Promise.all([
        import('./acts.js'),
        import('./context.js'),
      ]);
      return withPaddock(values, (p) => performAct(p, act, io, signal));
    }
    const { reply, socket, rest } = attempt;
    if (!reply.ok) {
      socket.destroy();
      io.write('stderr', `paddock: ${reply.code}: ${reply.message}\n`);
      return 1;
    }
    return follow(socket, rest, io, signal);
  });
}

/** Runs `fn` with an AbortSignal that SIGINT aborts when `cancellable`. */
async function withCancel<T>(
  cancellable: boolean | undefined,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  if (!cancellable) return fn(controller.signal);
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  try {
    return await fn(controller.signal);
  } finally {
    process.removeListener('SIGINT', onSignal);
  }
}

/** Writes the server's frames to `io` until its exit frame; Ctrl-C is sent as a cancel. */
function follow(socket: Socket, rest: Buffer, io: ActIo, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      fn();
    };
    const onLine = (text: string) => {
      let frame: CliFrame;
      try {
        frame = JSON.parse(text) as CliFrame;
      } catch {
        settle(() => reject(new Error('the Paddock server sent a line that is not JSON')));
        return;
      }
      if (typeof frame.stdout === 'string') io.write('stdout', frame.stdout);
      if (typeof frame.stderr === 'string') io.write('stderr', frame.stderr);
      if (typeof frame.exit === 'number') settle(() => resolve(frame.exit as number));
      const e = frame.error;
      if (e) {
        const error = e.usage
          ? new UsageError(e.message)
          : e.unexpected
            ? new Error(e.message)
            : new PaddockError(e.code as never, e.message);
        settle(() => reject(error));
      }
    };
    const onData = (chunk: Buffer | string) => {
      buffered += chunk.toString();
      for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
        const text = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (text) onLine(text);
      }
    };
    const cancel = () => socket.write('{"cancel":true}\n');
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
    socket.on('data', onData);
    socket.once('error', () => {});
    socket.once('close', () =>
      settle(() =>
        reject(
          new PaddockError(
            'NOT_RUNNING',
            'The Paddock server closed the connection before the command ended; check `paddock status` and the audit log.',
          ),
        ),
      ),
    );
    if (rest.length > 0) onData(rest);
    socket.resume();
  });
}
