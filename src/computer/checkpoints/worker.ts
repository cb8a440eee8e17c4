/**
 * The checkpoint worker: a thread that walks, copies, restores and collects with synchronous
 * system calls (a few microseconds each, against a thread-pool round trip for each asynchronous
 * one), so the server's event loop stays free meanwhile. It answers each message with a result or
 * an error in the shape of a PaddockError, and lives on between them (see CheckpointWorkers).
 */
import { parentPort } from 'node:worker_threads';
import { isPaddockError } from '../../shared/errors.js';
import { openRootDir } from './at.js';
import { collect } from './gc.js';
import { ObjectStore } from './objects.js';
import { restoreTree } from './restore.js';
import { snapshotTree } from './snapshot.js';
import type { WorkerRequest } from './worker-protocol.js';

/** Serves requests until the store ends this thread; its object store (and tree cache) lasts between them. */
function serve(): void {
  let objects: ObjectStore | null = null;
  const run = (req: WorkerRequest): unknown => {
    if (objects?.objectsDir !== req.objectsDir || objects.tmpDir !== req.tmpDir)
      objects = new ObjectStore(req.objectsDir, req.tmpDir);
    switch (req.op) {
      case 'snapshot':
        objects.prepare();
        return snapshotTree(openRootDir(req.source), {
          objects,
          previous: req.previous,
          maxBytes: req.maxBytes,
          maxBytesSetting: req.maxBytesSetting,
          ...(req.overlay ? { overlay: true } : {}),
          ...(req.heldBefore ? { heldBefore: req.heldBefore } : {}),
        });
      case 'restore':
        restoreTree(objects, req.root, req.dest);
        return null;
      case 'collect':
        // collection removes objects: what the cache knows may be gone
        objects.forgetTrees();
        return collect(objects, req.manifests);
    }
  };
  parentPort?.on('message', (req: WorkerRequest) => {
    try {
      parentPort?.postMessage({ ok: true, value: run(req) });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      parentPort?.postMessage({
        ok: false,
        error: isPaddockError(e)
          ? { code: e.code, message: e.message, details: e.details }
          : { code: 'INTERNAL', message: `${err.code ?? 'error'}: ${err.message}`, details: {} },
      });
    }
  });
}

serve();
