/**
 * Bounds what a peer that stops reading can cost: a guard on a writable stream (a socket, an
 * HTTP response) that destroys it when bytes wait unsent past a bound, or when the stream has
 * needed a drain for longer than a stall time. Everything written to the stream goes through
 * its `write`, so the guard sees every byte without polling.
 */
import type { Writable } from 'node:stream';

export interface SlowReaderLimits {
  /**
   * Bytes that may wait unsent before the one being written; past it the peer is dropped at
   * once. One large message alone never trips it; a backlog of them does.
   */
  maxBufferedBytes: number;
  /** How long the stream may need a drain (its buffer over the high-water mark) before the peer is dropped. */
  stallMs: number;
}

/** Default bounds: 64 MiB waiting, 30 s without a drain. */
export const DEFAULT_SLOW_READER_LIMITS: SlowReaderLimits = {
  maxBufferedBytes: 64 * 1024 * 1024,
  stallMs: 30_000,
};

/** Why a peer was dropped. */
export interface SlowReaderDrop {
  reason: 'buffered' | 'stalled';
  bufferedBytes: number;
}

/**
 * Watches `stream`'s writes; calls `onDrop` once and destroys the stream when a bound is
 * passed. Returns a function that stops watching (the stream stays as it is).
 */
export function guardSlowReader(
  stream: Writable,
  limits: SlowReaderLimits,
  onDrop: (drop: SlowReaderDrop) => void,
): () => void {
  const write = stream.write;
  let timer: NodeJS.Timeout | undefined;
  let active = true;
  const clear = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
  const stop = () => {
    if (!active) return;
    active = false;
    clear();
    stream.write = write;
    stream.off('drain', clear);
    stream.off('close', stop);
  };
  const drop = (reason: SlowReaderDrop['reason']) => {
    const bufferedBytes = stream.writableLength;
    stop();
    onDrop({ reason, bufferedBytes });
    stream.destroy();
  };
  stream.write = function guardedWrite(this: Writable, ...args: unknown[]): boolean {
    const before = stream.writableLength;
    const ok = (write as (...a: unknown[]) => boolean).apply(stream, args);
    if (!active) return ok;
    if (before > limits.maxBufferedBytes) drop('buffered');
    else if (!ok && !timer) {
      timer = setTimeout(() => drop('stalled'), limits.stallMs);
      timer.unref();
    }
    return ok;
  } as Writable['write'];
  stream.on('drain', clear);
  stream.once('close', stop);
  return stop;
}
