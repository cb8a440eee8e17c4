/**
 * What the store asks of the checkpoint worker (worker.ts), and running it: a worker thread per
 * computer's store, kept between requests, its answers turned back into values or PaddockErrors.
 */
import { Worker } from 'node:worker_threads';
import { type ErrorCode, PaddockError } from '../../shared/errors.js';
import type { DirEntry, Manifest } from './types.js';

interface Where {
  objectsDir: string;
  tmpDir: string;
}

/** A snapshot's part of a worker request (see snapshot.ts). */
export interface SnapshotRequest {
  op: 'snapshot';
  source: string;
  previous: string | null;
  maxBytes: number;
  maxBytesSetting: string;
  overlay?: boolean;
  heldBefore?: number;
}

/** One operation of the worker. */
export type WorkerRequest = Where &
  (
    | SnapshotRequest
    | { op: 'restore'; root: DirEntry; dest: string }
    | { op: 'collect'; manifests: Manifest[] }
  );

type Answer =
  | { ok: true; value: unknown }
  | { ok: false; error: { code: ErrorCode; message: string; details: Record<string, unknown> } };

/** How long a computer's worker waits for its next request before it ends. */
const IDLE_MS = 30_000;

/** One request in flight: its settlement. */
interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * The checkpoint workers of one store: a thread per computer's store, kept between requests
 * (its cache of trees makes the next checkpoint's walk cheaper) and ended after {@link IDLE_MS}
 * without one. The store's lock sends one request at a time to each. A request whose `signal`
 * fires ends that worker at once (its partial work is left for collection; the next request
 * starts a new one).
 */
export class CheckpointWorkers {
  private readonly workers = new Map<
    string,
    { worker: Worker; pending: Pending | null; idle: NodeJS.Timeout | null }
  >();

  /** Runs `req` in the worker of its objects directory. */
  run<T>(req: WorkerRequest, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(stopped());
    const key = req.objectsDir;
    const slot = this.workers.get(key) ?? this.start(key);
    if (slot.pending)
      return Promise.reject(
        new PaddockError('INTERNAL', 'A checkpoint worker got two requests at once; try again.'),
      );
    if (slot.idle) clearTimeout(slot.idle);
    slot.idle = null;
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => {
        this.end(key, stopped());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      slot.pending = {
        resolve: (v) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(v as T);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      // a request in flight keeps the process alive; an idle worker does not
      slot.worker.ref();
      slot.worker.postMessage(req);
    });
  }

  /** Ends every worker (the server's shutdown). */
  close(): void {
    for (const key of [...this.workers.keys()])
      this.end(key, new PaddockError('NOT_RUNNING', 'The server is shutting down.'));
  }

  private start(key: string) {
    // the worker is our own compiled module and needs no flag; the process's own flags are not
    // all valid for a worker (`--input-type` of `node -e`, or the per-process options Node 24's
    // test runner passes), and any of them would stop the worker's start
    const worker = new Worker(new URL('./worker.js', import.meta.url), { execArgv: [] });
    worker.unref();
    const slot = { worker, pending: null as Pending | null, idle: null as NodeJS.Timeout | null };
    this.workers.set(key, slot);
    worker.on('message', (a: Answer) => {
      const pending = slot.pending;
      slot.pending = null;
      worker.unref();
      slot.idle = setTimeout(() => this.end(key, null), IDLE_MS);
      slot.idle.unref();
      if (!pending) return;
      if (a.ok) pending.resolve(a.value);
      else pending.reject(new PaddockError(a.error.code, a.error.message, a.error.details));
    });
    worker.once('error', (e) => this.end(key, e));
    worker.once('exit', (code) =>
      this.end(
        key,
        new PaddockError('INTERNAL', `The checkpoint worker exited (${code}) without an answer; try again.`),
      ),
    );
    return slot;
  }

  /** Ends the worker of `key`; its request in flight, if any, fails with `error`. */
  private end(key: string, error: unknown): void {
    const slot = this.workers.get(key);
    if (!slot) return;
    this.workers.delete(key);
    if (slot.idle) clearTimeout(slot.idle);
    const pending = slot.pending;
    slot.pending = null;
    void slot.worker.terminate();
    if (pending) pending.reject(error);
  }
}

function stopped(): PaddockError {
  return new PaddockError(
    'TIMEOUT',
    'The checkpoint operation was stopped before it finished; nothing of it was kept. Try again.',
  );
}
