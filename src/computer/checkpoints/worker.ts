/**
 * The checkpoint worker: a thread that walks, copies, restores and collects with synchronous
 * system calls (a few microseconds each, against a thread-pool round trip for each asynchronous
 * one), so the server's event loop stays free meanwhile. One worker per operation; it answers
 * one message, a result or an error in the shape of a PaddockError.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { isPaddockError } from '../../shared/errors.js';
import { openRootDir } from './at.js';
import { collect } from './gc.js';
import { ObjectStore } from './objects.js';
import { restoreTree } from './restore.js';
import { snapshotTree } from './snapshot.js';
import type { WorkerRequest } from './worker-protocol.js';

function run(req: WorkerRequest): unknown {
  const objects = new ObjectStore(req.objectsDir, req.tmpDir);
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
      return collect(objects, req.manifests);
  }
}

try {
  parentPort?.postMessage({ ok: true, value: run(workerData as WorkerRequest) });
} catch (e) {
  const err = e as NodeJS.ErrnoException;
  parentPort?.postMessage({
    ok: false,
    error: isPaddockError(e)
      ? { code: e.code, message: e.message, details: e.details }
      : { code: 'INTERNAL', message: `${err.code ?? 'error'}: ${err.message}`, details: {} },
  });
}
