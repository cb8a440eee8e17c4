/**
 * Reading a container image from an unpacked archive: an OCI image layout (`skopeo copy …
 * oci-archive:`, `docker save` of Docker 25 and later, a registry pull) or a Docker archive
 * (`docker save`, `podman save`). Every blob the image names is checked against its digest —
 * the manifest and config by their sha256, each layer by its compressed digest and by its
 * uncompressed digest (the config's `diff_ids`) — before anything is unpacked; paths inside the
 * archive are confined to it and must be plain files.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  existsSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
} from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { PaddockError } from '../../shared/errors.js';
import type { LayerCompression } from './layer.js';

/** The parts of an image config that say what the image is. */
export interface ImageConfig {
  architecture?: string;
  os?: string;
  config?: { Env?: string[]; Cmd?: string[]; Entrypoint?: string[]; WorkingDir?: string; User?: string };
  rootfs?: { type?: string; diff_ids?: string[] };
}

/** One verified layer of an image, bottom first. */
export interface SourceLayer {
  /** The blob inside the unpacked archive. */
  file: string;
  compression: LayerCompression;
  /** sha256 of the uncompressed tar (the layer's identity). */
  diffId: string;
  /** sha256 of the blob as stored. */
  digest: string;
  sizeBytes: number;
}

/** A verified image, ready to unpack. */
export interface ImageSource {
  /** `sha256:…` of the image config: the image's identity. */
  id: string;
  config: ImageConfig;
  layers: SourceLayer[];
  /** Names the archive gives the image (Docker archives' RepoTags, OCI ref annotations). */
  tags: string[];
}

const DIGEST = /^sha256:([a-f0-9]{64})$/;

function damaged(what: string, next = 'export the image again and import it again'): PaddockError {
  return new PaddockError('INVALID_ARGUMENT', `${what}; ${next}. Nothing was imported.`);
}

/** A path inside `dir` named by the archive: relative, no `..`, and a plain file. */
function inside(dir: string, rel: string, what: string): string {
  if (!rel || rel.startsWith('/') || rel.split('/').some((s) => s === '..' || s === '') || rel.includes('\0'))
    throw damaged(`The archive names ${what} at "${rel.slice(0, 200)}", outside the archive`);
  const path = join(dir, rel);
  let ok = false;
  try {
    ok = lstatSync(path).isFile();
  } catch {
    ok = false;
  }
  if (!ok) throw damaged(`The archive lacks ${what} ("${rel.slice(0, 200)}"), or it is not a plain file`);
  return path;
}

function blobPath(dir: string, digest: string, what: string): string {
  const m = DIGEST.exec(digest);
  if (!m)
    throw damaged(`The archive names ${what} by an unsupported digest "${String(digest).slice(0, 100)}"`);
  return inside(dir, `blobs/sha256/${m[1]}`, what);
}

function sha256File(path: string): string {
  return `sha256:${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
}

function readJson<T>(path: string, what: string): T {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch {
    throw damaged(`The archive's ${what} is not valid JSON`);
  }
}

/** How a blob is compressed, from its first bytes. */
export function sniffCompression(path: string): LayerCompression {
  const fd = openSync(path, 'r');
  const head = Buffer.alloc(4);
  try {
    readSync(fd, head, 0, 4, 0);
  } finally {
    closeSync(fd);
  }
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head.readUInt32LE(0) === 0xfd2fb528) return 'zstd';
  return 'none';
}

/** sha256 of a blob as stored and of its uncompressed content, in one pass. */
export async function digestsOf(
  path: string,
  compression: LayerCompression,
): Promise<{ digest: string; diffId: string }> {
  const outer = createHash('sha256');
  const inner = createHash('sha256');
  if (compression === 'zstd')
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      'The image has zstd-compressed layers, which Paddock cannot import yet; export it with gzip layers (e.g. skopeo copy --dest-compress-format gzip) and import again.',
    );
  const source = createReadStream(path, { highWaterMark: 1024 * 1024 });
  source.on('data', (chunk) => outer.update(chunk as Buffer));
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      inner.update(chunk);
      done();
    },
  });
  try {
    if (compression === 'gzip') await pipeline(source, createGunzip(), sink);
    else await pipeline(source, sink);
  } catch (e) {
    throw damaged(`A layer of the image cannot be read (${(e as Error).message})`);
  }
  const digest = `sha256:${outer.digest('hex')}`;
  return { digest, diffId: compression === 'none' ? digest : `sha256:${inner.digest('hex')}` };
}

interface Descriptor {
  mediaType?: string;
  digest: string;
  size?: number;
  platform?: { architecture?: string; os?: string };
  annotations?: Record<string, string>;
}

/** The OCI architecture name of this host. */
export function hostArchitecture(): string {
  return process.arch === 'x64' ? 'amd64' : process.arch;
}

function pickManifest(dir: string, descriptors: Descriptor[], tags: string[]): Descriptor {
  const arch = hostArchitecture();
  for (const d of descriptors) {
    const ref = d.annotations?.['org.opencontainers.image.ref.name'];
    if (ref) tags.push(ref);
  }
  const fits = descriptors.filter(
    (d) => !d.platform || (d.platform.architecture === arch && (d.platform.os ?? 'linux') === 'linux'),
  );
  const chosen = fits[0];
  if (!chosen)
    throw damaged(`The archive has no image for linux/${arch}`, 'export the image for this platform');
  if (chosen.mediaType?.includes('index') || chosen.mediaType?.includes('manifest.list')) {
    const path = blobPath(dir, chosen.digest, 'an image index');
    if (sha256File(path) !== chosen.digest) throw damaged('The image index does not match its digest');
    return pickManifest(
      dir,
      readJson<{ manifests?: Descriptor[] }>(path, 'image index').manifests ?? [],
      tags,
    );
  }
  return chosen;
}

/** Verifies one layer against what the manifest and config say. */
async function verifyLayer(
  file: string,
  index: number,
  expected: { digest?: string; diffId?: string },
): Promise<SourceLayer> {
  const compression = sniffCompression(file);
  // the blob's own digest first: a damaged blob is named as such before it is decompressed
  if (expected.digest) {
    const stored = createHash('sha256');
    await pipeline(
      createReadStream(file, { highWaterMark: 1024 * 1024 }),
      new Writable({
        write(chunk: Buffer, _enc, done) {
          stored.update(chunk);
          done();
        },
      }),
    );
    const got = `sha256:${stored.digest('hex')}`;
    if (got !== expected.digest)
      throw damaged(
        `Layer ${index + 1} of the image does not match its digest: the archive says ${expected.digest}, its content is ${got}. The archive is damaged or was altered`,
      );
  }
  const found = await digestsOf(file, compression);
  for (const [kind, want, got] of [
    ['digest', expected.digest, found.digest],
    ['uncompressed digest', expected.diffId, found.diffId],
  ] as const) {
    if (want && want !== got)
      throw damaged(
        `Layer ${index + 1} of the image does not match its ${kind}: the archive says ${want}, its content is ${got}. The archive is damaged or was altered`,
      );
  }
  return { file, compression, diffId: found.diffId, digest: found.digest, sizeBytes: lstatSync(file).size };
}

/** Reads and verifies the image in an unpacked archive directory (OCI layout or Docker archive). */
export async function readImageDir(dir: string): Promise<ImageSource> {
  const tags: string[] = [];
  let configPath: string;
  let configDigest: string;
  let layerRefs: { file: string; digest?: string }[];
  if (existsSync(join(dir, 'index.json'))) {
    const index = readJson<{ manifests?: Descriptor[] }>(
      inside(dir, 'index.json', 'its index'),
      'index.json',
    );
    const chosen = pickManifest(dir, index.manifests ?? [], tags);
    const manifestPath = blobPath(dir, chosen.digest, 'the image manifest');
    if (sha256File(manifestPath) !== chosen.digest)
      throw damaged('The image manifest does not match its digest');
    const manifest = readJson<{ config?: Descriptor; layers?: Descriptor[] }>(manifestPath, 'image manifest');
    if (!manifest.config || !Array.isArray(manifest.layers))
      throw damaged('The image manifest names no config or layers');
    configDigest = manifest.config.digest;
    configPath = blobPath(dir, configDigest, 'the image config');
    layerRefs = manifest.layers.map((l) => ({ file: blobPath(dir, l.digest, 'a layer'), digest: l.digest }));
  } else if (existsSync(join(dir, 'manifest.json'))) {
    const list = readJson<{ Config?: string; Layers?: string[]; RepoTags?: string[] }[]>(
      inside(dir, 'manifest.json', 'its manifest'),
      'manifest.json',
    );
    const entry = list[0];
    if (!entry?.Config || !Array.isArray(entry.Layers))
      throw damaged("The archive's manifest.json names no image");
    tags.push(...(entry.RepoTags ?? []));
    configPath = inside(dir, entry.Config, 'the image config');
    const named = /([a-f0-9]{64})(?:\.json)?$/.exec(entry.Config);
    configDigest = sha256File(configPath);
    if (named && `sha256:${named[1]}` !== configDigest)
      throw damaged('The image config does not match its digest');
    layerRefs = entry.Layers.map((l) => {
      const file = inside(dir, l, 'a layer');
      const m = /^blobs\/sha256\/([a-f0-9]{64})$/.exec(l);
      return m ? { file, digest: `sha256:${m[1]}` } : { file };
    });
  } else {
    throw damaged(
      'The file is not an image archive (no index.json or manifest.json inside)',
      'make one with docker save, podman save or skopeo copy … oci-archive:FILE',
    );
  }
  if (sha256File(configPath) !== configDigest) throw damaged('The image config does not match its digest');
  const config = readJson<ImageConfig>(configPath, 'image config');
  const diffIds = config.rootfs?.diff_ids ?? [];
  if (diffIds.length !== layerRefs.length)
    throw damaged(`The image config lists ${diffIds.length} layers but the manifest ${layerRefs.length}`);
  const layers: SourceLayer[] = [];
  for (const [i, ref] of layerRefs.entries())
    layers.push(
      await verifyLayer(ref.file, i, { ...(ref.digest ? { digest: ref.digest } : {}), diffId: diffIds[i] }),
    );
  return { id: configDigest, config, layers, tags };
}
