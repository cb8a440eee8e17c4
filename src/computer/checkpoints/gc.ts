/**
 * Garbage collection of one computer's objects: mark every tree and blob reachable from a
 * manifest, then remove every other object and everything in `tmp/` (what a checkpoint cut short
 * left behind). Runs under the computer's lock, so no checkpoint is being written meanwhile.
 * Synchronous, in the checkpoint worker.
 */
import { existsSync, readdirSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { ObjectStore } from './objects.js';
import type { Manifest } from './types.js';

/** What a collection removed and what is left. */
export interface GcResult {
  removedObjects: number;
  removedBytes: number;
  removedTemp: number;
  /** Bytes of the objects that remain (all referenced). */
  keptBytes: number;
  keptObjects: number;
}

/** The objects reachable from `manifests`, each with its size in bytes. */
export function markReachable(objects: ObjectStore, manifests: Manifest[]): Map<string, number> {
  const marked = new Map<string, number>();
  const trees = manifests.flatMap((m) =>
    m.rootLayer ? [m.root.tree, m.rootLayer.root.tree] : [m.root.tree],
  );
  while (trees.length > 0) {
    const hash = trees.pop() as string;
    if (marked.has(hash)) continue;
    marked.set(hash, statSync(objects.pathOf(hash)).size);
    for (const e of objects.readTree(hash).entries) {
      if (e.type === 'dir') trees.push(e.tree);
      else if (e.type === 'file') marked.set(e.hash, e.size);
    }
  }
  return marked;
}

/** Removes what no manifest reaches. */
export function collect(objects: ObjectStore, manifests: Manifest[]): GcResult {
  const marked = markReachable(objects, manifests);
  const result: GcResult = {
    removedObjects: 0,
    removedBytes: 0,
    removedTemp: 0,
    keptBytes: 0,
    keptObjects: 0,
  };
  if (existsSync(objects.tmpDir)) {
    for (const name of readdirSync(objects.tmpDir)) {
      rmSync(join(objects.tmpDir, name), { recursive: true, force: true });
      result.removedTemp++;
    }
  }
  if (!existsSync(objects.objectsDir)) return result;
  for (const prefix of readdirSync(objects.objectsDir)) {
    const dir = join(objects.objectsDir, prefix);
    for (const rest of readdirSync(dir)) {
      const size = marked.get(prefix + rest);
      if (size !== undefined) {
        result.keptBytes += size;
        result.keptObjects++;
        continue;
      }
      const path = join(dir, rest);
      result.removedBytes += statSync(path).size;
      unlinkSync(path);
      result.removedObjects++;
    }
  }
  return result;
}
