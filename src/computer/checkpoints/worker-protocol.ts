/**
 * What the store asks of the checkpoint worker (worker.ts), and running it: one worker thread per
 * request, its answer turned back into a value or a PaddockError.
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

/** Runs `req` in a fresh worker; `signal` ends the worker (its partial work is left for collection). */
export function inWorker<T>(req: WorkerRequest, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // the worker is our own compiled module and needs no flag; the process's own flags are not
    // all valid for a worker (`--input-type` of `node -e`, or the per-process options Node 24's
    // test runner passes), and any of them would stop the worker's start
    const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: req, execArgv: [] });
    let answered = false;
    const onAbort = (): void => {
      void worker.terminate();
      reject(
        new PaddockError(
          'TIMEOUT',
          'The checkpoint operation was stopped before it finished; nothing of it was kept. Try again.',
        ),
      );
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (a: Answer) => {
      answered = true;
      signal?.removeEventListener('abort', onAbort);
      if (a.ok) resolve(a.value as T);
      else reject(new PaddockError(a.error.code, a.error.message, a.error.details));
    });
    worker.once('error', (e) => {
      signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
    worker.once('exit', (code) => {
      signal?.removeEventListener('abort', onAbort);
      if (!answered)
        reject(
          new PaddockError(
            'INTERNAL',
            `The checkpoint worker exited (${code}) without an answer; try again.`,
          ),
        );
    });
  });
}
