/**
 * Connecting upstream: to exactly the addresses the decision vetted (tried in order), with a
 * connect timeout; and splicing two streams with byte counts and an idle timeout.
 */
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isPaddockError, PaddockError } from '../../shared/errors.js';
import type { ConnectionRecord } from './connection-log.js';

/** Connects to the first of `addresses` that answers on `port` within `timeoutMs` each. */
export async function connectPinned(
  addresses: readonly string[],
  port: number,
  timeoutMs: number,
): Promise<Socket> {
  let last: unknown = null;
  for (const address of addresses) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const socket = connect({ host: address, port });
        const timer = setTimeout(() => {
          socket.destroy();
          reject(
            new PaddockError(
              'TIMEOUT',
              `${address}:${port} did not accept the connection within ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        socket.once('connect', () => {
          clearTimeout(timer);
          socket.setNoDelay(true);
          socket.removeAllListeners('error');
          resolve(socket);
        });
        socket.once('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
      });
    } catch (e) {
      last = e;
    }
  }
  if (last instanceof PaddockError) throw last;
  const code = (last as NodeJS.ErrnoException | null)?.code ?? 'no address';
  throw new PaddockError(
    'UPSTREAM_ERROR',
    `could not connect to port ${port} of ${addresses.join(', ')} (${code})`,
    {
      cause: code,
    },
  );
}

/**
 * Closes `streams` when no byte moved through any of them for `idleMs`. Returns a function
 * that records activity (call it on every chunk) and a stop function.
 */
export function idleGuard(idleMs: number, onIdle: () => void): { touch(): void; stop(): void } {
  let last = performance.now();
  let timer: NodeJS.Timeout | null = null;
  const arm = (ms: number) => {
    timer = setTimeout(() => {
      const quiet = performance.now() - last;
      if (quiet >= idleMs) onIdle();
      else arm(idleMs - quiet);
    }, ms);
    timer.unref();
  };
  arm(idleMs);
  return {
    touch: () => {
      last = performance.now();
    },
    stop: () => {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

/** Pipes `a` ↔ `b` until either side closes; counts bytes; `done` runs once. */
export function splice(
  client: Duplex,
  upstream: Duplex,
  idleMs: number,
  counts: { bytesSent: number; bytesReceived: number },
  done: (idle: boolean) => void,
): void {
  let finished = false;
  let idle = false;
  const guard = idleGuard(idleMs, () => {
    idle = true;
    client.destroy();
    upstream.destroy();
  });
  const finish = () => {
    if (finished) return;
    finished = true;
    guard.stop();
    client.destroy();
    upstream.destroy();
    done(idle);
  };
  client.on('data', (chunk: Buffer) => {
    counts.bytesSent += chunk.length;
    guard.touch();
  });
  upstream.on('data', (chunk: Buffer) => {
    counts.bytesReceived += chunk.length;
    guard.touch();
  });
  client.on('error', finish);
  upstream.on('error', finish);
  client.on('close', finish);
  upstream.on('close', finish);
  // half-close travels through; the connection ends when both sides are done
  let ends = 0;
  const ended = () => {
    ends += 1;
    if (ends === 2) finish();
  };
  client.on('end', ended);
  upstream.on('end', ended);
  client.pipe(upstream);
  upstream.pipe(client);
}

/** Why an upstream connect failed, as a row and a program see it. */
export function connectFailure(
  e: unknown,
  host: string,
  port: number,
): { code: 'TIMEOUT' | 'UPSTREAM_ERROR'; message: string; cause: unknown } {
  const timeout = isPaddockError(e) && e.code === 'TIMEOUT';
  return {
    code: timeout ? 'TIMEOUT' : 'UPSTREAM_ERROR',
    message: `Paddock egress: ${host}:${port} could not be reached: ${(e as Error).message}.`,
    cause: isPaddockError(e) ? e.details.cause : undefined,
  };
}

/** Splices a tunnel (CONNECT or SOCKS) and writes its row when it ends. */
export function tunnel(
  client: Duplex,
  upstream: Duplex,
  idleMs: number,
  record: ConnectionRecord,
  rule: string,
): void {
  splice(client, upstream, idleMs, record, (idle) => {
    record.finish(
      idle
        ? {
            success: false,
            rule,
            errorCode: 'TIMEOUT',
            errorMessage: `no bytes moved for ${idleMs} ms; the tunnel was closed`,
          }
        : { success: true, rule },
    );
  });
}
