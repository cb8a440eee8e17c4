/**
 * Checkpoints of directory trees, per computer, under `<data>/checkpoints/<computer>/`:
 *
 * - `objects/` trees and file contents by SHA-256 (objects.ts), shared by all its checkpoints;
 * - `manifests/<id>.json` one per checkpoint: written to `tmp/`, flushed, then renamed, so a
 *   checkpoint exists whole or not at all;
 * - `tmp/` work in progress, `usage.json` the bytes its objects hold, `lock` the writer's pid.
 *
 * Retention keeps at most `maxCount` checkpoints and `maxBytes` of objects, dropping the oldest.
 * A checkpoint of a computer on an image also holds its writable root layer (the overlay's upper
 * directory, whiteouts and opaque directories included), beside /workspace, in the same objects.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { computerNameProblem } from '../../shared/computer-name.js';
import { PaddockError } from '../../shared/errors.js';
import { timeOrderedId } from '../../shared/ids.js';
import type { GcResult } from './gc.js';
import { KeyedLock } from './lock.js';
import type { SnapshotResult } from './snapshot.js';
import {
  type CheckpointInfo,
  type CheckpointLayer,
  type CheckpointOrigin,
  type ImageIdentity,
  infoOf,
  type Manifest,
  RETENTION_SETTINGS,
  type Retention,
  type RootLayer,
} from './types.js';
import { CheckpointWorkers, type SnapshotRequest } from './worker-protocol.js';

const ID_PATTERN = /^ck_[0-9a-z]{9}[A-Za-z0-9_-]{11}$/;

/** How the store is set up. */
export interface CheckpointStoreOptions {
  /** The data directory; checkpoints live in its `checkpoints/`. */
  dataDir: string;
  retention: Retention;
  /** Flush objects to disk before a manifest makes them a checkpoint (default true). */
  durable?: boolean;
}

/** Options of a checkpoint. */
export interface CreateOptions {
  label?: string;
  signal?: AbortSignal;
  /** Checkpoints retention must not drop in this step. */
  keep?: string[];
  origin?: CheckpointOrigin;
  /**
   * Freezes whatever writes to `source` (and the root layer) for the walk and resolves to the thaw
   * (null: it could not). With no earlier checkpoint, the trees are first walked unfrozen, so the
   * frozen walk only picks up what changed meanwhile and the pause stays short.
   */
  pause?: () => Promise<(() => void) | null>;
  /** Also the computer's writable root layer: the host path of its overlay's upper directory, and its image. */
  rootLayer?: { path: string; image: ImageIdentity } | null;
}

/** Checkpoints of directory trees, kept per computer with retention and garbage collection. */
export class CheckpointStore {
  private readonly lock = new KeyedLock();
  /** A worker thread per computer's store, kept between requests (their tree caches). */
  private readonly workers = new CheckpointWorkers();

  constructor(private readonly opts: CheckpointStoreOptions) {}

  /** The directory of `computer`'s checkpoints. */
  dirOf(computer: string): string {
    const problem = computerNameProblem(computer);
    if (problem) throw new PaddockError('INVALID_ARGUMENT', problem);
    return join(this.opts.dataDir, 'checkpoints', computer);
  }

  /**
   * Takes a checkpoint of the tree at `source` (a /workspace) for `computer`, and of its root
   * layer when `o.rootLayer` names one, then applies retention.
   */
  async create(computer: string, source: string, o: CreateOptions = {}): Promise<CheckpointInfo> {
    const dir = this.dirOf(computer);
    await this.ensureLayout(dir);
    return this.lock.run(computer, join(dir, 'lock'), async (stale) => {
      const earlier = await this.manifests(dir);
      if (stale || (await readdir(join(dir, 'tmp'))).length > 0) await this.collectIn(dir, earlier);
      const last = earlier.at(-1) ?? null;
      const walk = (from: string, previous: string | null, extra: Partial<SnapshotRequest> = {}) =>
        this.workers.run<SnapshotResult>(
          {
            ...this.where(dir),
            op: 'snapshot',
            source: from,
            previous,
            maxBytes: this.opts.retention.maxBytes,
            maxBytesSetting: RETENTION_SETTINGS.maxBytes,
            ...extra,
          },
          o.signal,
        );
      const layer = o.rootLayer ?? null;
      // the root layer counts against maxBytes with the workspace, and keeps whiteouts and opaque marks
      const walkRoot = (path: string, previous: string | null, held: number) =>
        walk(path, previous, { overlay: true, heldBefore: held });
      // the first checkpoint of a paused source is copied once while it runs (see `pause`)
      const pre = o.pause && !last ? await walk(source, null) : null;
      const preRoot = pre && layer ? await walkRoot(layer.path, null, pre.heldBytes) : null;
      const thaw = o.pause ? await o.pause() : null;
      const pausedAt = performance.now();
      let snap: SnapshotResult;
      let rootSnap: SnapshotResult | null = null;
      try {
        snap = await walk(source, pre?.root.tree ?? last?.root.tree ?? null);
        if (layer)
          rootSnap = await walkRoot(
            layer.path,
            preRoot?.root.tree ?? last?.rootLayer?.root.tree ?? null,
            snap.heldBytes,
          );
      } finally {
        thaw?.();
      }
      const pausedMs = thaw ? Math.round(performance.now() - pausedAt) : null;
      const rootLayer: RootLayer | null =
        layer && rootSnap
          ? {
              root: rootSnap.root,
              image: layer.image,
              files: rootSnap.files,
              bytes: rootSnap.bytes,
              skipped: rootSnap.skipped,
            }
          : null;
      const extraBytes = (pre?.addedBytes ?? 0) + (preRoot?.addedBytes ?? 0) + (rootSnap?.addedBytes ?? 0);
      const manifest: Manifest = {
        version: 1,
        id: timeOrderedId('ck', 8),
        seq: (last?.seq ?? 0) + 1,
        computer,
        label: o.label ?? null,
        createdAt: new Date().toISOString(),
        root: snap.root,
        addedBytes: snap.addedBytes + extraBytes,
        files: snap.files,
        bytes: snap.bytes,
        skipped: snap.skipped,
        ...(o.origin ? { origin: o.origin } : {}),
        pausedMs,
        ...(rootLayer ? { rootLayer } : {}),
      };
      if (this.opts.durable !== false) await promisify(execFile)('sync', ['-f', join(dir, 'objects')]);
      await this.writeAtomically(dir, join('manifests', `${manifest.id}.json`), JSON.stringify(manifest));
      const usage = (await this.usage(dir)) + manifest.addedBytes;
      // usage.json is a hint (exact after a collection, and a crash leads to one): renamed, not flushed
      await this.writeAtomically(dir, 'usage.json', JSON.stringify({ bytes: usage }), false);
      await this.retain(dir, [...earlier, manifest], usage, new Set(o.keep ?? []));
      return infoOf(manifest);
    });
  }

  /** Ends the worker threads (after the last checkpoint of a shutdown; a later request starts one again). */
  close(): void {
    this.workers.close();
  }

  /** `computer`'s checkpoints, newest first. */
  async list(computer: string): Promise<CheckpointInfo[]> {
    const dir = this.dirOf(computer);
    try {
      return (await this.manifests(dir)).reverse().map(infoOf);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return []; // none taken yet
      throw e;
    }
  }

  /**
   * `computer`'s newest checkpoint, read synchronously (a launch decides at once whether it
   * boots from one); null when it has none or its store cannot be read.
   */
  latest(computer: string): CheckpointInfo | null {
    let newest: Manifest | null = null;
    try {
      const dir = join(this.dirOf(computer), 'manifests');
      for (const n of readdirSync(dir)) {
        if (!n.endsWith('.json')) continue;
        const m = JSON.parse(readFileSync(join(dir, n), 'utf8')) as Manifest;
        if (!newest || m.seq > newest.seq) newest = m;
      }
    } catch {
      return null;
    }
    return newest ? infoOf(newest) : null;
  }

  /** Checkpoint `id` of `computer`; NOT_FOUND when there is none. */
  async get(computer: string, id: string): Promise<Manifest> {
    const dir = this.dirOf(computer);
    if (ID_PATTERN.test(id)) {
      try {
        return JSON.parse(await readFile(join(dir, 'manifests', `${id}.json`), 'utf8')) as Manifest;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    throw new PaddockError(
      'NOT_FOUND',
      `Computer ${computer} has no checkpoint ${JSON.stringify(id)}: list_checkpoints shows the ones it has (the oldest are removed by retention).`,
      { checkpointId: id },
    );
  }

  /**
   * Writes checkpoint `id` of `computer` into `dest`, which must be absent or an empty directory:
   * its /workspace, or with `layer: 'root'` its root layer (an overlay upper directory, to be
   * mounted only after it is complete).
   */
  async restore(
    computer: string,
    id: string,
    dest: string,
    o: { layer?: CheckpointLayer } = {},
  ): Promise<void> {
    const dir = this.dirOf(computer);
    await this.ensureLayout(dir);
    await this.lock.run(computer, join(dir, 'lock'), async () => {
      const m = await this.get(computer, id);
      if (o.layer === 'root' && !m.rootLayer)
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `Checkpoint ${id} holds no root layer (it was taken of a computer without an image); restore its /workspace only.`,
          { checkpointId: id },
        );
      const root = o.layer === 'root' ? (m.rootLayer as RootLayer).root : m.root;
      await this.workers.run({ ...this.where(dir), op: 'restore', root, dest });
    });
  }

  /** Removes checkpoint `id` of `computer` and the objects only it used. */
  async remove(computer: string, id: string): Promise<GcResult> {
    const dir = this.dirOf(computer);
    await this.ensureLayout(dir);
    return this.lock.run(computer, join(dir, 'lock'), async () => {
      await this.get(computer, id);
      await unlink(join(dir, 'manifests', `${id}.json`));
      return this.collectIn(dir, await this.manifests(dir));
    });
  }

  /**
   * Keeps the newest `keepNewest` checkpoints of `computer` (0: none), removes the others, then
   * collects once: every object no remaining checkpoint uses goes, with whatever an interrupted
   * checkpoint left.
   */
  async prune(computer: string, keepNewest: number): Promise<{ removed: string[]; gc: GcResult }> {
    const dir = this.dirOf(computer);
    await this.ensureLayout(dir);
    return this.lock.run(computer, join(dir, 'lock'), async () => {
      const all = await this.manifests(dir);
      const drop = all.slice(0, Math.max(0, all.length - Math.max(0, keepNewest)));
      for (const m of drop) await unlink(join(dir, 'manifests', `${m.id}.json`));
      const gc = await this.collectIn(dir, all.slice(drop.length));
      return { removed: drop.map((m) => m.id), gc };
    });
  }

  /** Whether `computer` has a store on disk (it has taken a checkpoint, or one is being taken). */
  has(computer: string): boolean {
    return existsSync(this.dirOf(computer));
  }

  /** Removes every object no checkpoint uses and whatever an interrupted checkpoint left. */
  async gc(computer: string): Promise<GcResult> {
    const dir = this.dirOf(computer);
    await this.ensureLayout(dir);
    return this.lock.run(computer, join(dir, 'lock'), async () =>
      this.collectIn(dir, await this.manifests(dir)),
    );
  }

  /** Bytes held by `computer`'s objects (exact after a collection, an upper bound otherwise). */
  async bytesOf(computer: string): Promise<number> {
    return this.usage(this.dirOf(computer));
  }

  private where(dir: string): { objectsDir: string; tmpDir: string } {
    return { objectsDir: join(dir, 'objects'), tmpDir: join(dir, 'tmp') };
  }

  private async ensureLayout(dir: string): Promise<void> {
    for (const sub of ['objects', 'manifests', 'tmp'])
      await mkdir(join(dir, sub), { recursive: true, mode: 0o700 });
  }

  private async manifests(dir: string): Promise<Manifest[]> {
    const names = (await readdir(join(dir, 'manifests'))).filter((n) => n.endsWith('.json'));
    const all = await Promise.all(
      names.map(async (n) => JSON.parse(await readFile(join(dir, 'manifests', n), 'utf8')) as Manifest),
    );
    return all.sort((a, b) => a.seq - b.seq);
  }

  private async usage(dir: string): Promise<number> {
    try {
      return (JSON.parse(await readFile(join(dir, 'usage.json'), 'utf8')) as { bytes: number }).bytes;
    } catch {
      return 0;
    }
  }

  private async collectIn(dir: string, manifests: Manifest[]): Promise<GcResult> {
    const result = await this.workers.run<GcResult>({ ...this.where(dir), op: 'collect', manifests });
    await this.writeAtomically(dir, 'usage.json', JSON.stringify({ bytes: result.keptBytes }), false);
    return result;
  }

  /**
   * Drops the oldest checkpoints until both retention limits hold; the newest always stays, and
   * so do those in `keep` (a restore's target while the state it leaves is saved).
   */
  private async retain(dir: string, manifests: Manifest[], usage: number, keep: Set<string>): Promise<void> {
    const { maxCount, maxBytes } = this.opts.retention;
    const live = [...manifests];
    const dropOldest = async (): Promise<boolean> => {
      const i = live.findIndex((m, at) => at < live.length - 1 && !keep.has(m.id));
      if (i < 0) return false;
      const [m] = live.splice(i, 1);
      await unlink(join(dir, 'manifests', `${(m as Manifest).id}.json`));
      return true;
    };
    let dropped = false;
    while (live.length > Math.max(1, maxCount) && (await dropOldest())) dropped = true;
    let bytes = dropped ? (await this.collectIn(dir, live)).keptBytes : usage;
    while (bytes > maxBytes && (await dropOldest())) bytes = (await this.collectIn(dir, live)).keptBytes;
  }

  /** Writes `rel` under `dir` through a temporary file and a rename, flushed (file and directory) unless `flush` is false. */
  private async writeAtomically(dir: string, rel: string, text: string, flush = true): Promise<void> {
    const tmp = join(dir, 'tmp', `${process.pid}.${rel.replaceAll('/', '_')}`);
    const h = await open(tmp, 'w', 0o600);
    try {
      await h.writeFile(text);
      if (flush) await h.sync();
    } finally {
      await h.close();
    }
    await rename(tmp, join(dir, rel));
    if (!flush) return;
    const d = await open(join(dir, rel, '..'), 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  }
}
