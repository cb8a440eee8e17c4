/**
 * The content-addressed object store of one computer's checkpoints: `objects/<2 hex>/<62 hex>`,
 * each named by the SHA-256 of its bytes, written to `tmp/` first and renamed into place, so an
 * object under its final name is always whole. Objects are never changed after that; only garbage
 * collection removes them. Synchronous: it runs in the checkpoint worker (worker.ts), where a
 * system call costs a few microseconds instead of a thread-pool round trip.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Tree } from './types.js';

/** Trees remembered at most (a few KiB each); past it the memory starts over. */
const MAX_REMEMBERED_TREES = 20_000;
/** Files up to this size are read whole; larger ones stream through in chunks of it. */
const CHUNK_BYTES = 1024 * 1024;

/** How a stored file's bytes went: its object, and whether they were new to the store. */
export interface Stored {
  hash: string;
  size: number;
  /** Bytes this store did not hold before (0 when an equal object existed). */
  added: number;
}

/** The objects of one computer's checkpoints. */
export class ObjectStore {
  private readonly buf = Buffer.allocUnsafe(CHUNK_BYTES + 1);
  /** Trees read or written lately, by hash: the next walk reads its previous trees from here. */
  private readonly trees = new Map<string, { tree: Tree; size: number }>();
  private prepared = false;

  constructor(
    readonly objectsDir: string,
    readonly tmpDir: string,
  ) {}

  /** Makes the 256 prefix directories (once per store). */
  prepare(): void {
    // a worker keeps its store between requests: once made (and still there), the directories stay
    if (this.prepared && existsSync(join(this.objectsDir, 'ff')) && existsSync(this.tmpDir)) return;
    this.prepared = true;
    for (let i = 0; i < 256; i++)
      mkdirSync(join(this.objectsDir, i.toString(16).padStart(2, '0')), { recursive: true, mode: 0o700 });
    mkdirSync(this.tmpDir, { recursive: true, mode: 0o700 });
  }

  /** Where object `hash` lives. */
  pathOf(hash: string): string {
    return join(this.objectsDir, hash.slice(0, 2), hash.slice(2));
  }

  /** Whether object `hash` exists. */
  has(hash: string): boolean {
    return existsSync(this.pathOf(hash));
  }

  /** Stores `bytes` (a tree or a small file) unless an equal object exists. */
  putBytes(bytes: Buffer): Stored {
    const hash = createHash('sha256').update(bytes).digest('hex');
    if (this.has(hash)) return { hash, size: bytes.length, added: 0 };
    const tmp = this.tmpName();
    const fd = openSync(tmp, 'wx', 0o400);
    try {
      let at = 0;
      while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.pathOf(hash));
    return { hash, size: bytes.length, added: bytes.length };
  }

  /**
   * Stores what open file `fd` holds from offset 0 to its end (`size` as examined: the caller
   * compares the file's state before and after, so more or fewer bytes only mean a retry).
   */
  putFile(fd: number, size: number): Stored & { readBytes: number } {
    if (size <= CHUNK_BYTES) {
      let got = 0;
      for (;;) {
        const n = readSync(fd, this.buf, got, this.buf.length - got, got);
        if (n === 0) break;
        got += n;
        if (got === this.buf.length) break;
      }
      return { ...this.putBytes(this.buf.subarray(0, got)), readBytes: got };
    }
    const hash = createHash('sha256');
    const tmp = this.tmpName();
    const out = openSync(tmp, 'wx', 0o400);
    let pos = 0;
    try {
      for (;;) {
        const n = readSync(fd, this.buf, 0, CHUNK_BYTES, pos);
        if (n === 0) break;
        hash.update(this.buf.subarray(0, n));
        let at = 0;
        while (at < n) at += writeSync(out, this.buf, at, n - at);
        pos += n;
      }
    } finally {
      closeSync(out);
    }
    const hex = hash.digest('hex');
    if (this.has(hex)) {
      unlinkSync(tmp);
      return { hash: hex, size: pos, added: 0, readBytes: pos };
    }
    renameSync(tmp, this.pathOf(hex));
    return { hash: hex, size: pos, added: pos, readBytes: pos };
  }

  /** Stores a tree; its bytes are canonical JSON, so equal trees are one object. */
  putTree(tree: Tree): Stored {
    const bytes = Buffer.from(JSON.stringify(tree));
    const stored = this.putBytes(bytes);
    this.remember(stored.hash, tree, bytes.length);
    return stored;
  }

  /**
   * Tree `hash` as stored, when this store remembers it (read or written lately, so on disk):
   * what a walk uses for a directory whose entries did not change. Null when not remembered.
   */
  knownTree(hash: string): Stored | null {
    const size = this.trees.get(hash)?.size;
    return size === undefined ? null : { hash, size, added: 0 };
  }

  /**
   * Reads tree `hash` (from the trees this store read or wrote lately, else from disk). A tree is
   * never changed under its hash, so a remembered one is the object's content; callers must not
   * change what they get.
   */
  readTree(hash: string): Tree {
    const known = this.trees.get(hash);
    if (known) return known.tree;
    const bytes = readFileSync(this.pathOf(hash));
    const tree = JSON.parse(bytes.toString('utf8')) as Tree;
    this.remember(hash, tree, bytes.length);
    return tree;
  }

  /** Forgets the remembered trees (before a collection removes objects). */
  forgetTrees(): void {
    this.trees.clear();
  }

  private remember(hash: string, tree: Tree, size: number): void {
    if (this.trees.size >= MAX_REMEMBERED_TREES) this.trees.clear();
    this.trees.set(hash, { tree, size });
  }

  /** A fresh name in the temporary directory (removed by garbage collection if left behind). */
  tmpName(): string {
    return join(this.tmpDir, `${process.pid}.${randomUUID()}`);
  }
}
