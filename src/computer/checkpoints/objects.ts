/**
 * The content-addressed object store of one computer's checkpoints: `objects/<2 hex>/<62 hex>`,
 * each named by the SHA-256 of its bytes, written to `tmp/` first and renamed into place, so an
 * object under its final name is always whole. Objects are never changed after that; only garbage
 * collection removes them.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Tree } from './types.js';

/** Files up to this size are read whole; larger ones stream through in chunks of it. */
const WHOLE_FILE_BYTES = 1024 * 1024;

/** How a stored file's bytes went: its object, and whether they were new to the store. */
export interface Stored {
  hash: string;
  size: number;
  /** Bytes this store did not hold before (0 when an equal object existed). */
  added: number;
}

/** The objects of one computer's checkpoints. */
export class ObjectStore {
  constructor(
    readonly objectsDir: string,
    readonly tmpDir: string,
  ) {}

  /** Where object `hash` lives. */
  pathOf(hash: string): string {
    return join(this.objectsDir, hash.slice(0, 2), hash.slice(2));
  }

  /** Whether object `hash` exists. */
  async has(hash: string): Promise<boolean> {
    try {
      await stat(this.pathOf(hash));
      return true;
    } catch {
      return false;
    }
  }

  /** Stores `bytes` (a tree or a small file) unless an equal object exists. */
  async putBytes(bytes: Buffer): Promise<Stored> {
    const hash = createHash('sha256').update(bytes).digest('hex');
    if (await this.has(hash)) return { hash, size: bytes.length, added: 0 };
    const tmp = this.tmpName();
    await writeFile(tmp, bytes, { mode: 0o400, flag: 'wx' });
    return { hash, size: bytes.length, added: await this.settle(tmp, hash, bytes.length) };
  }

  /**
   * Stores what `src` holds from offset 0 to its end (`size` as examined: a reader compares the
   * file's state before and after, so more or fewer bytes only mean a retry).
   */
  async putFile(src: FileHandle, size: number): Promise<Stored & { readBytes: number }> {
    if (size <= WHOLE_FILE_BYTES) {
      const buf = Buffer.allocUnsafe(size + 1);
      let got = 0;
      for (;;) {
        const { bytesRead } = await src.read(buf, got, buf.length - got, got);
        if (bytesRead === 0) break;
        got += bytesRead;
        if (got === buf.length) break;
      }
      const bytes = buf.subarray(0, got);
      return { ...(await this.putBytes(bytes)), readBytes: got };
    }
    const hash = createHash('sha256');
    const tmp = this.tmpName();
    const out = await open(tmp, 'wx', 0o400);
    const buf = Buffer.allocUnsafe(WHOLE_FILE_BYTES);
    let pos = 0;
    try {
      for (;;) {
        const { bytesRead } = await src.read(buf, 0, buf.length, pos);
        if (bytesRead === 0) break;
        const chunk = buf.subarray(0, bytesRead);
        hash.update(chunk);
        await out.write(chunk, 0, bytesRead);
        pos += bytesRead;
      }
    } finally {
      await out.close();
    }
    const hex = hash.digest('hex');
    if (await this.has(hex)) {
      await unlink(tmp);
      return { hash: hex, size: pos, added: 0, readBytes: pos };
    }
    return { hash: hex, size: pos, added: await this.settle(tmp, hex, pos), readBytes: pos };
  }

  /** Stores a tree; its bytes are canonical JSON, so equal trees are one object. */
  async putTree(tree: Tree): Promise<Stored> {
    return this.putBytes(Buffer.from(JSON.stringify(tree)));
  }

  /** Reads tree `hash`. */
  async readTree(hash: string): Promise<Tree> {
    return JSON.parse(await readFile(this.pathOf(hash), 'utf8')) as Tree;
  }

  /** A fresh name in the temporary directory (removed by garbage collection if left behind). */
  tmpName(): string {
    return join(this.tmpDir, `${process.pid}.${randomUUID()}`);
  }

  private async settle(tmp: string, hash: string, size: number): Promise<number> {
    await mkdir(join(this.objectsDir, hash.slice(0, 2)), { recursive: true, mode: 0o700 });
    await rename(tmp, this.pathOf(hash));
    return size;
  }
}
