/**
 * The client side of the server's unix socket, for the stdio bridge and the CLI's `status`,
 * `stop` and `open`. Only node built-ins: it runs at the start of every `paddock mcp`.
 */
import { connect, type Socket } from 'node:net';
import { type InstancePaths, readServerInfo, type ServerInfo } from './instance.js';
import type { SocketHello, SocketReply } from './socket-protocol.js';

/** Most bytes of a reply line the client reads before it gives up on the server. */
const MAX_REPLY_BYTES = 4 * 1024 * 1024;

/** The outcome of knocking on the socket. */
export type Knock =
  /** No server: no server.json, no socket, or a socket nobody listens on (`stale`). */
  | { kind: 'absent'; stale: boolean }
  /** The server answered the opening line; on `ok`, `socket` carries the rest (`rest` first). */
  | { kind: 'answered'; info: ServerInfo; reply: SocketReply; socket: Socket; rest: Buffer };

/**
 * Connects to the server of `paths`, sends the opening line (with the key of server.json) and
 * reads the reply. A refused server closes the socket itself.
 */
export function knock(
  paths: InstancePaths,
  hello: Omit<SocketHello, 'paddock' | 'key'>,
  timeoutMs = 10_000,
): Promise<Knock> {
  const info = readServerInfo(paths);
  if (!info) return Promise.resolve({ kind: 'absent', stale: false });
  return new Promise((resolve, reject) => {
    const socket = connect(paths.socket);
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the Paddock server (pid ${info.pid}) did not answer on ${paths.socket} in time.`));
    }, timeoutMs);
    const done = (result: Knock) => {
      clearTimeout(timer);
      socket.off('data', onData);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const nl = buffered.indexOf(10);
      if (nl === -1) {
        if (buffered.length > MAX_REPLY_BYTES) socket.destroy(new Error('the server sent no reply line'));
        return;
      }
      socket.pause();
      let reply: SocketReply;
      try {
        reply = JSON.parse(buffered.subarray(0, nl).toString('utf8')) as SocketReply;
      } catch {
        socket.destroy(new Error('the server answered with something that is not JSON'));
        return;
      }
      done({ kind: 'answered', info, reply, socket, rest: buffered.subarray(nl + 1) });
    };
    socket.on('data', onData);
    socket.once('connect', () => {
      socket.write(`${JSON.stringify({ paddock: 1, key: info.key, ...hello })}\n`);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (e.code === 'ENOENT' || e.code === 'ECONNREFUSED')
        resolve({ kind: 'absent', stale: e.code === 'ECONNREFUSED' });
      else reject(new Error(`cannot reach the Paddock server on ${paths.socket}: ${e.message}`));
    });
    socket.once('close', () => {
      clearTimeout(timer);
      // closed before a reply: a server that is shutting down counts as none
      resolve({ kind: 'absent', stale: false });
    });
  });
}

/** Sends a one-shot request (`status`, `stop`, `open`); undefined when no server runs. */
export async function requestServer(
  paths: InstancePaths,
  op: 'status' | 'stop' | 'open',
): Promise<{ info: ServerInfo; reply: SocketReply } | undefined> {
  const result = await knock(paths, { op });
  if (result.kind === 'absent') return undefined;
  result.socket.destroy();
  return { info: result.info, reply: result.reply };
}
