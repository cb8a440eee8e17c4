/**
 * The image store: images a computer can boot from, under `<data>/images` (0700, root's).
 *
 * - `layers/<id>/`: one unpacked layer each (layer.ts), named by the first 96 bits of its
 *   uncompressed digest and stored once, whichever images share it;
 * - `images/<name>/image.json`: what the image is (source, layers bottom first, config);
 *   `images/<name>/top/`: Paddock's own small top layer (the guest account in `/etc/passwd`
 *   and `/etc/group`, and apt's setting to download as root where the image has apt);
 * - `tmp/`: imports under way. An import is verified whole before anything is unpacked, unpacks
 *   into `tmp/`, and becomes visible with one rename; one that fails leaves nothing behind.
 *
 * A computer on an image mounts an overlay whose lower layers are `top/` and the image's layers,
 * read-only, and whose upper layer is on the computer's own disk (see docs/images.md).
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { PaddockError } from '../../shared/errors.js';
import { hostIdOf, IMAGE_ID_BASE, type ImageIdBase } from './ids.js';
import { unpackLayer } from './layer.js';
import type { ImageConfig, ImageSource } from './oci.js';
import { writeTopLayer } from './top-layer.js';

/** Names of images: lower-case letters, digits, `.`, `_` and `-`. */
export const IMAGE_NAME = /^[a-z0-9][a-z0-9._-]{0,127}$/;

/** Where an image came from. */
export type ImageOrigin =
  | { kind: 'debian'; suite: string; packages: string[]; mirror?: string; variant: string }
  | { kind: 'archive'; file: string }
  | { kind: 'registry'; ref: string };

/** One image as stored. */
export interface ImageRecord {
  name: string;
  /** The image's identity: its config digest, or the digest of the built root file system. */
  id: string;
  origin: ImageOrigin;
  createdAt: string;
  /** Layer digests (uncompressed), bottom first. */
  layers: string[];
  /** The image's own description of its system (`PRETTY_NAME` of /etc/os-release), if any. */
  os: string | null;
  /** Bytes of regular files in its layers. */
  sizeBytes: number;
  files: number;
  /** Environment the image config sets (PATH is the computer's own). */
  env: string[];
  /** The id shift the image was stored with (`<base>:<guest host uid>`); another needs a rebuild. */
  ids: string;
}

/** An image as a computer mounts it: its lower layers, top first. */
export interface MountableImage {
  record: ImageRecord;
  lowerDirs: string[];
}

function shortId(diffId: string): string {
  return diffId.replace(/^sha256:/, '').slice(0, 24);
}

function idsTag(ids: ImageIdBase): string {
  return `${IMAGE_ID_BASE}:${ids.jobHostId}`;
}

/** The images of one data directory. */
export class ImageStore {
  readonly layersDir: string;
  readonly imagesDir: string;
  readonly tmpDir: string;

  constructor(
    readonly dir: string,
    private readonly ids: ImageIdBase,
  ) {
    this.layersDir = join(dir, 'layers');
    this.imagesDir = join(dir, 'images');
    this.tmpDir = join(dir, 'tmp');
  }

  /** Creates the directories (0700) and removes what interrupted imports left. */
  open(): this {
    for (const d of [this.dir, this.layersDir, this.imagesDir, this.tmpDir]) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      chmodSync(d, 0o700);
    }
    for (const name of readdirSync(this.tmpDir)) {
      const pid = Number(/^(\d+)-/.exec(name)?.[1]);
      if (!pidAlive(pid)) rmSync(join(this.tmpDir, name), { recursive: true, force: true });
    }
    return this;
  }

  /** A fresh directory under tmp/ for one operation (removed by `open` if its process died). */
  scratch(): string {
    const path = join(this.tmpDir, `${process.pid}-${randomBytes(6).toString('hex')}`);
    mkdirSync(path, { mode: 0o700 });
    return path;
  }

  /** Every image, by name. */
  list(): ImageRecord[] {
    if (!existsSync(this.imagesDir)) return [];
    return readdirSync(this.imagesDir)
      .filter((n) => IMAGE_NAME.test(n))
      .flatMap((n) => {
        const r = this.get(n);
        return r ? [r] : [];
      });
  }

  /** One image, or null when there is none of that name. */
  get(name: string): ImageRecord | null {
    if (!IMAGE_NAME.test(name)) return null;
    try {
      return JSON.parse(readFileSync(join(this.imagesDir, name, 'image.json'), 'utf8')) as ImageRecord;
    } catch {
      return null;
    }
  }

  /** What a computer mounts for `name`; throws with the next step when it cannot. */
  mountable(name: string, buildHint: string): MountableImage {
    const record = this.get(name);
    if (!record)
      throw new PaddockError('NOT_FOUND', `The image "${name}" is not in the image store; ${buildHint}.`);
    if (record.ids !== idsTag(this.ids))
      throw new PaddockError(
        'UNSUPPORTED_CAPABILITY',
        `The image "${name}" was stored for other sandbox uids (computer.sandboxUid changed); ${buildHint} again.`,
      );
    const layers = record.layers.map((d) => join(this.layersDir, shortId(d)));
    const missing = layers.find((l) => !existsSync(l));
    if (missing)
      throw new PaddockError(
        'NOT_FOUND',
        `A layer of the image "${name}" is missing (${missing}); ${buildHint} again.`,
      );
    return { record, lowerDirs: [join(this.imagesDir, name, 'top'), ...layers.reverse()] };
  }

  /**
   * Stores a verified image as `name` (replacing an image of that name that no computer uses).
   * `progress` hears one line per step.
   */
  async install(
    name: string,
    source: Pick<ImageSource, 'id' | 'layers'> & { config?: ImageConfig },
    origin: ImageOrigin,
    progress: (line: string) => void = () => undefined,
  ): Promise<ImageRecord> {
    checkName(name);
    const work = this.scratch();
    const added: string[] = [];
    try {
      let files = 0;
      let sizeBytes = 0;
      for (const [i, layer] of source.layers.entries()) {
        const target = join(this.layersDir, shortId(layer.diffId));
        if (existsSync(target)) {
          progress(`layer ${i + 1}/${source.layers.length} ${layer.diffId.slice(7, 19)}: already stored`);
          const stat = layerStat(target);
          files += stat.files;
          sizeBytes += stat.bytes;
          continue;
        }
        progress(
          `layer ${i + 1}/${source.layers.length} ${layer.diffId.slice(7, 19)}: unpacking ${mib(layer.sizeBytes)}`,
        );
        const staged = join(work, `layer-${i}`);
        const found = await unpackLayer(layer.file, layer.compression, staged, this.ids);
        writeFileSync(
          join(work, `layer-${i}.json`),
          JSON.stringify({ files: found.files, bytes: found.bytes }),
        );
        files += found.files;
        sizeBytes += found.bytes;
        try {
          renameSync(staged, target);
          renameSync(join(work, `layer-${i}.json`), `${target}.json`);
          added.push(target);
        } catch {
          // another import stored the same layer meanwhile
          rmSync(staged, { recursive: true, force: true });
        }
      }
      const layers = source.layers.map((l) => join(this.layersDir, shortId(l.diffId)));
      const staged = join(work, 'image');
      mkdirSync(staged, { mode: 0o700 });
      const top = join(staged, 'top');
      writeTopLayer(top, [...layers].reverse(), this.ids);
      const record: ImageRecord = {
        name,
        id: source.id,
        origin,
        createdAt: new Date().toISOString(),
        layers: source.layers.map((l) => l.diffId),
        os: osName([top, ...[...layers].reverse()]),
        sizeBytes,
        files,
        env: (source.config?.config?.Env ?? []).filter((e) => !e.startsWith('PATH=')),
        ids: idsTag(this.ids),
      };
      writeFileSync(join(staged, 'image.json'), `${JSON.stringify(record, null, 2)}\n`);
      const target = join(this.imagesDir, name);
      if (existsSync(target)) {
        if (this.inUse(name))
          throw new PaddockError(
            'NOT_RUNNING',
            `The image "${name}" is in use by a running computer; stop it (paddock computers stop NAME) and try again.`,
          );
        renameSync(target, join(work, 'replaced'));
      }
      renameSync(staged, target);
      progress(`image ${name}: ${files} files, ${mib(sizeBytes)}`);
      return record;
    } catch (e) {
      // nothing half-imported: the layers this import added go unless another image uses them
      const kept = new Set(this.list().flatMap((r) => r.layers.map((d) => join(this.layersDir, shortId(d)))));
      for (const l of added)
        if (!kept.has(l)) {
          rmSync(l, { recursive: true, force: true });
          rmSync(`${l}.json`, { force: true });
        }
      throw e;
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  /** Removes an image (its layers stay until `prune`); refuses while a computer uses it. */
  remove(name: string): void {
    checkName(name);
    const target = join(this.imagesDir, name);
    if (!existsSync(target))
      throw new PaddockError('NOT_FOUND', `There is no image "${name}"; see paddock images list.`);
    if (this.inUse(name))
      throw new PaddockError(
        'NOT_RUNNING',
        `The image "${name}" is in use by a running computer; stop it (paddock computers stop NAME) and try again.`,
      );
    const trash = join(this.scratch(), 'removed');
    renameSync(target, trash);
    rmSync(join(trash, '..'), { recursive: true, force: true });
  }

  /** Removes layers no image names; returns how many and the bytes freed. */
  prune(): { layers: number; bytes: number } {
    const kept = new Set(this.list().flatMap((r) => r.layers.map(shortId)));
    let layers = 0;
    let bytes = 0;
    for (const name of readdirSync(this.layersDir)) {
      if (!/^[a-f0-9]{24}$/.test(name) || kept.has(name)) continue;
      bytes += layerStat(join(this.layersDir, name)).bytes;
      rmSync(join(this.layersDir, name), { recursive: true, force: true });
      rmSync(join(this.layersDir, `${name}.json`), { force: true });
      layers++;
    }
    return { layers, bytes };
  }

  /** Whether a mount of any process on this host has the image's top layer as a lower layer. */
  inUse(name: string): boolean {
    const needle = escapeMountPath(join(this.imagesDir, name, 'top'));
    const seen = new Set<string>();
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const ns = readlinkSync(`/proc/${pid}/ns/mnt`);
        if (seen.has(ns)) continue;
        seen.add(ns);
        const text = readFileSync(`/proc/${pid}/mountinfo`, 'utf8');
        if (text.split('\n').some((l) => l.includes(' - overlay ') && l.includes(needle))) return true;
      } catch {
        // gone, or not ours to read
      }
    }
    return false;
  }

  /** Host bytes the store takes (allocated blocks), for `images list`. */
  diskBytes(path = this.dir): number {
    let total = 0;
    const walk = (p: string) => {
      const s = lstatSync(p, { bigint: false });
      total += s.blocks * 512;
      if (s.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e));
    };
    if (existsSync(path)) walk(path);
    return total;
  }

  /** The host id the image's root is stored as (what owns a computer's upper layer). */
  rootHostId(): number {
    return hostIdOf(0, this.ids);
  }
}

function checkName(name: string): void {
  if (!IMAGE_NAME.test(name))
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `"${name.slice(0, 140)}" is not an image name: use lower-case letters, digits, ".", "_" and "-" (at most 128).`,
    );
}

function layerStat(dir: string): { files: number; bytes: number } {
  try {
    return JSON.parse(readFileSync(`${dir}.json`, 'utf8')) as { files: number; bytes: number };
  } catch {
    return { files: 0, bytes: 0 };
  }
}

/** PRETTY_NAME from the first layer (top first) that has /etc/os-release or /usr/lib/os-release. */
function osName(layersTopFirst: string[]): string | null {
  for (const layer of layersTopFirst) {
    for (const rel of ['etc/os-release', 'usr/lib/os-release']) {
      try {
        const s = lstatSync(join(layer, rel));
        if (!s.isFile()) continue;
        const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync(join(layer, rel), 'utf8'));
        return m?.[1] ?? null;
      } catch {
        // next
      }
    }
  }
  return null;
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function escapeMountPath(p: string): string {
  return p.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

/** `12.3 MiB` */
export function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
