/**
 * `paddock mcp`: the stdio bridge between a desktop MCP client and the one server of its data
 * directory. It finds the server's socket, starts `paddock serve` in the background when none
 * runs, and relays newline-delimited JSON-RPC both ways as one session of that server.
 *
 * It loads almost nothing — node built-ins, the config locator and this folder's line framing —
 * so its handshake costs about what a minimal stdio server's does; the MCP SDK, the config
 * schemas and every service live in the server. It never waits for a computer.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import type { Socket } from 'node:net';
import { dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { locateConfig } from '../config/locate.js';
import { sleep } from '../shared/abort.js';
import { computerNameProblem } from '../shared/computer-name.js';
import {
  type ConfigIdentity,
  ensureRunDir,
  type InstancePaths,
  instancePaths,
  processAlive,
} from './instance.js';
import { LineLimiter, MAX_MESSAGE_BYTES, oversizedReply } from './line-limit.js';
import { type Knock, knock } from './socket-client.js';

export interface BridgeOptions {
  configPath?: string;
  computer?: string;
  toolsets?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  stdin?: NodeJS.ReadableStream & { destroy?(): void };
  stdout?: NodeJS.WritableStream;
  /** How long a cold start may take before the bridge gives up. */
  startTimeoutMs?: number;
}

/** A bridge failure: printed as one line on stderr, exit code 1 (2 for bad input). */
export class BridgeError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** The executable a cold start runs (`bin/paddock` of this installation). */
const PADDOCK_BIN = fileURLToPath(new URL('../../../bin/paddock', import.meta.url));

/** Runs the bridge until the client or the server ends the session; returns the exit code. */
export async function runBridge(options: BridgeOptions = {}): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const location = locateConfig({
    cwd,
    env,
    ...(options.configPath ? { configPath: options.configPath } : {}),
  });
  if (location.missing)
    throw new BridgeError(
      `${location.missing}: not found; create it with \`paddock init\` or fix the path.`,
      2,
    );
  if (options.computer !== undefined) {
    const problem = computerNameProblem(options.computer);
    if (problem) throw new BridgeError(`--computer: ${problem}`, 2);
  }
  const identity: ConfigIdentity = { file: location.file ?? null, projectDir: location.projectDir };
  const paths = instancePaths(location.dataDir);
  const hello = {
    op: 'mcp' as const,
    config: identity,
    ...(options.computer !== undefined ? { computer: options.computer } : {}),
    ...(options.toolsets ? { toolsets: options.toolsets } : {}),
  };
  let attempt = await knock(paths, hello);
  if (attempt.kind === 'absent') {
    attempt = await startServer(paths, () => knock(paths, hello), {
      cwd,
      env,
      ...(options.configPath ? { configPath: options.configPath } : {}),
      timeoutMs: options.startTimeoutMs ?? 60_000,
    });
  }
  const { reply, socket, rest, info } = attempt;
  if (!reply.ok) {
    socket.destroy();
    throw new BridgeError(`${reply.message}`, reply.code === 'INVALID_ARGUMENT' ? 2 : 1);
  }
  return relay(socket, rest, info.pid, paths, options);
}

/** Relays stdin → socket (bounded lines) and socket → stdout until one side ends; the exit code. */
export function relay(
  socket: Socket,
  rest: Buffer,
  serverPid: number,
  paths: InstancePaths,
  options: BridgeOptions,
): Promise<number> {
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  return new Promise((resolve) => {
    let clientEnded = false;
    // the bridge's own replies go out between the server's lines, never inside one
    let atLineStart = true;
    let held: string[] = [];
    const toClient = (chunk: Buffer) => {
      if (chunk.length === 0) return true;
      const ok = stdout.write(chunk);
      atLineStart = chunk[chunk.length - 1] === 10;
      if (atLineStart && held.length > 0) {
        stdout.write(held.join(''));
        held = [];
      }
      return ok;
    };
    const limiter = new LineLimiter(MAX_MESSAGE_BYTES, (dropped) => {
      const reply = oversizedReply(dropped, MAX_MESSAGE_BYTES);
      if (atLineStart) stdout.write(reply);
      else held.push(reply);
    });
    const finish = (code: number) => {
      for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.off(signal, stop);
      stdin.unpipe?.(limiter);
      stdin.destroy?.();
      resolve(code);
    };
    toClient(rest);
    socket.on('data', (chunk: Buffer) => {
      if (!toClient(chunk)) {
        socket.pause();
        stdout.once('drain', () => socket.resume());
      }
    });
    socket.resume();
    stdin.once('end', () => {
      clientEnded = true;
    });
    stdin.pipe(limiter).pipe(socket);
    stdout.on('error', () => {
      clientEnded = true;
      socket.end();
    });
    socket.on('error', () => {});
    socket.once('close', async () => {
      if (clientEnded) return finish(0);
      // A killed process closes its sockets before it is reaped: give it a moment to be gone.
      const alive = await stillAliveAfter(serverPid, 2000);
      process.stderr.write(
        `paddock mcp: the connection to the Paddock server (pid ${serverPid}) of ${paths.dataDir} was lost: it ${
          alive ? 'closed this session' : 'stopped or crashed'
        }. Restart this MCP server in your client; a new Paddock server starts when none runs (its log: ${paths.log}).\n`,
      );
      finish(1);
    });
    function stop() {
      clientEnded = true;
      socket.end();
      setTimeout(() => finish(0), 2000).unref();
    }
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(signal, stop);
  });
}

/** Whether `pid` still runs after up to `ms`: a dying process is seen as gone as soon as it is. */
async function stillAliveAfter(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processAlive(pid)) {
    if (Date.now() >= deadline) return true;
    await delay(50);
  }
  return false;
}

interface StartOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  configPath?: string;
  timeoutMs: number;
}

/**
 * Starts `paddock serve --background` detached, its output appended to the data directory's
 * log, and waits until its socket answers. The start lock makes a second bridge wait for this
 * start instead of starting a second server.
 */
async function startServer(
  paths: InstancePaths,
  tryConnect: () => Promise<Knock>,
  options: StartOptions,
): Promise<Extract<Knock, { kind: 'answered' }>> {
  ensureRunDir(paths);
  // loaded only on a cold start: the server is about to load far more
  const { acquireLock } = await import('./instance-lock.js');
  const lock = acquireLock(paths.startLock, options.timeoutMs);
  if (!lock)
    throw new BridgeError(`another bridge is starting the Paddock server of ${paths.dataDir}; try again.`);
  try {
    const again = await tryConnect();
    if (again.kind === 'answered') return again;
    mkdirSync(dirname(paths.log), { recursive: true, mode: 0o700 });
    const log = openSync(paths.log, 'a', 0o600);
    const logStart = readSize(paths.log);
    writeSync(
      log,
      `--- paddock serve started by paddock mcp (pid ${process.pid}) at ${new Date().toISOString()}\n`,
    );
    const child = spawn(
      process.execPath,
      [PADDOCK_BIN, 'serve', '--background', ...(options.configPath ? ['--config', options.configPath] : [])],
      { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', log, log] },
    );
    closeSync(log);
    let exited: number | null | undefined;
    child.once('exit', (code) => {
      exited = code;
    });
    child.unref();
    const deadline = Date.now() + options.timeoutMs;
    // a knock on a socket that is not there yet costs a failed connect: poll often, the
    // handshake waits on this loop
    for (let delayMs = 5; ; delayMs = Math.min(delayMs * 2, 20)) {
      const result = await tryConnect();
      if (result.kind === 'answered') return result;
      if (exited !== undefined) {
        const tail = readTail(paths.log, logStart);
        throw new BridgeError(
          `the Paddock server it started exited with code ${exited} before it was ready:\n${tail}\n(full log: ${paths.log})`,
          exited === 2 ? 2 : 1,
        );
      }
      if (Date.now() > deadline)
        throw new BridgeError(
          `the Paddock server it started was not ready in time; see its log: ${paths.log}`,
        );
      await sleep(delayMs);
    }
  } finally {
    lock.release();
  }
}

function readSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readTail(file: string, from: number): string {
  try {
    const text = readFileSync(file).subarray(from).toString('utf8').trim();
    return text.split('\n').slice(-20).join('\n');
  } catch {
    return '(no log)';
  }
}
