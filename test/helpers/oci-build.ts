/**
 * The test's own image tooling: a tiny image (busybox from Debian's busybox-static) written as an
 * OCI image layout by hand — gzip layers, config, manifest, index — which skopeo then turns into
 * the archives users bring (`oci-archive:`, `docker-archive:`) or pushes to a registry.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** Programs the busybox image links to busybox. */
const APPLETS = [
  'sh',
  'ls',
  'cat',
  'echo',
  'id',
  'touch',
  'mkdir',
  'rm',
  'test',
  'stat',
  'head',
  'sleep',
  'env',
  'grep',
  'uname',
];

/** A layer as a directory tree the caller fills; whiteouts are files named `.wh.NAME`. */
export function layerDir(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The busybox system: /bin/busybox and its applets. */
export function fillBusybox(dir: string): void {
  mkdirSync(join(dir, 'bin'), { recursive: true });
  copyFileSync('/bin/busybox', join(dir, 'bin', 'busybox'));
  for (const a of APPLETS) symlinkSync('busybox', join(dir, 'bin', a));
  for (const d of ['etc', 'tmp', 'usr/bin']) mkdirSync(join(dir, d), { recursive: true });
}

function sha(b: Buffer): string {
  return `sha256:${createHash('sha256').update(b).digest('hex')}`;
}

/**
 * Writes an OCI image layout at `out` from layer directories (bottom first) and returns the
 * digests of its layers' blobs.
 */
export function writeOciLayout(
  out: string,
  layers: string[],
  env: string[] = [],
): { layerDigests: string[] } {
  const blobs = join(out, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const put = (b: Buffer) => {
    const d = sha(b);
    writeFileSync(join(blobs, d.slice(7)), b);
    return d;
  };
  const diffIds: string[] = [];
  const descriptors: { mediaType: string; digest: string; size: number }[] = [];
  for (const dir of layers) {
    const tar = execFileSync(
      'tar',
      ['-c', '--numeric-owner', '--owner=0', '--group=0', '--sort=name', '-C', dir, '.'],
      {
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    diffIds.push(sha(tar));
    const gz = gzipSync(tar);
    descriptors.push({
      mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip',
      digest: put(gz),
      size: gz.length,
    });
  }
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { Env: ['PATH=/bin', ...env], Cmd: ['/bin/sh'] },
      rootfs: { type: 'layers', diff_ids: diffIds },
    }),
  );
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: put(config),
        size: config.length,
      },
      layers: descriptors,
    }),
  );
  const index = {
    schemaVersion: 2,
    manifests: [
      {
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        digest: put(manifest),
        size: manifest.length,
        annotations: { 'org.opencontainers.image.ref.name': 'latest' },
      },
    ],
  };
  writeFileSync(join(out, 'index.json'), JSON.stringify(index));
  writeFileSync(join(out, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  return { layerDigests: descriptors.map((d) => d.digest) };
}

/** skopeo copy with the flags a test needs (no signature policy of the host's, plain HTTP). */
export function skopeo(from: string, to: string): void {
  const policy = join(process.env.TMPDIR ?? '/tmp', 'paddock-skopeo-policy.json');
  writeFileSync(policy, '{"default":[{"type":"insecureAcceptAnything"}]}');
  execFileSync(
    'skopeo',
    ['--policy', policy, 'copy', '--quiet', '--src-tls-verify=false', '--dest-tls-verify=false', from, to],
    { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 },
  );
}

/** Flips one byte in the middle of a file (a damaged blob). */
export function corrupt(path: string): void {
  const b = readFileSync(path);
  const at = Math.floor(b.length / 2);
  b[at] = (b[at] ?? 0) ^ 0xff;
  writeFileSync(path, b);
}
