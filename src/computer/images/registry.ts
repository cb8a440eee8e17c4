/**
 * `paddock images pull REF`: an image from an OCI registry (the distribution API v2), written
 * into a scratch OCI layout and then verified and stored like an imported archive. Credentials
 * come from the Docker config file (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`:
 * `auths.<registry>.auth`), sent as Basic or exchanged for a Bearer token as the registry asks.
 * A registry on loopback (`localhost`, `127.0.0.1`, `[::1]`) is spoken to over plain HTTP, as
 * Docker does; every other over HTTPS.
 */
import { createHash } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PaddockError } from '../../shared/errors.js';
import { hostArchitecture, readImageDir } from './oci.js';
import type { ImageRecord, ImageStore } from './store.js';

/** A parsed image reference. */
export interface ImageRef {
  registry: string;
  repository: string;
  /** A tag or a `sha256:` digest. */
  reference: string;
}

const ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/** Parses `[registry/]repository[:tag][@digest]` (Docker's rules for the default registry). */
export function parseImageRef(ref: string): ImageRef {
  const bad = () =>
    new PaddockError(
      'INVALID_ARGUMENT',
      `"${ref.slice(0, 200)}" is not an image reference; write REGISTRY/NAME:TAG (e.g. localhost:5000/team/tools:1).`,
    );
  if (!/^[A-Za-z0-9._:/@\-[\]]+$/.test(ref)) throw bad();
  let rest = ref;
  let reference = 'latest';
  const at = rest.indexOf('@');
  if (at >= 0) {
    reference = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!/^sha256:[a-f0-9]{64}$/.test(reference)) throw bad();
  } else {
    const colon = rest.lastIndexOf(':');
    if (colon > rest.lastIndexOf('/')) {
      reference = rest.slice(colon + 1);
      rest = rest.slice(0, colon);
    }
  }
  const parts = rest.split('/');
  const first = parts[0] ?? '';
  let registry = 'registry-1.docker.io';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    registry = first;
    parts.shift();
  } else if (parts.length === 1) parts.unshift('library');
  const repository = parts.join('/');
  const host =
    /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
  if (!host.test(registry)) throw bad();
  if (!repository || !/^[a-z0-9]+(?:[._/-][a-z0-9]+)*$/.test(repository)) throw bad();
  return { registry, repository, reference };
}

/** The store name of a pulled image: its reference, lower-cased, with other characters as `-`. */
export function refImageName(ref: string): string {
  return (
    ref
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .slice(0, 128) || 'image'
  );
}

function isLoopback(registry: string): boolean {
  const host = registry.replace(/:\d+$/, '');
  return host === 'localhost' || host === '[::1]' || /^127\./.test(host);
}

/** The credentials the Docker config file holds for `registry`, as a Basic value. */
export function dockerCredentials(registry: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const file = join(env.DOCKER_CONFIG ?? join(homedir(), '.docker'), 'config.json');
  let config: { auths?: Record<string, { auth?: string; username?: string; password?: string }> };
  try {
    config = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
  const keys =
    registry === 'registry-1.docker.io'
      ? ['https://index.docker.io/v1/', 'docker.io', registry]
      : [registry, `https://${registry}`, `http://${registry}`];
  for (const k of keys) {
    const entry = config.auths?.[k];
    if (entry?.auth) return entry.auth;
    if (entry?.username && entry.password)
      return Buffer.from(`${entry.username}:${entry.password}`).toString('base64');
  }
  return null;
}

class RegistryClient {
  private authorization: string | null = null;
  private readonly base: string;

  constructor(
    private readonly ref: ImageRef,
    private readonly basic: string | null,
  ) {
    this.base = `${isLoopback(ref.registry) ? 'http' : 'https'}://${ref.registry}/v2/${ref.repository}`;
  }

  async get(path: string, accept?: string): Promise<Response> {
    const url = `${this.base}${path}`;
    const send = () =>
      fetch(url, {
        headers: {
          ...(accept ? { accept } : {}),
          ...(this.authorization ? { authorization: this.authorization } : {}),
        },
        signal: AbortSignal.timeout(10 * 60_000),
      });
    let res = await send().catch((e: Error) => {
      throw new PaddockError(
        'UPSTREAM_ERROR',
        `Could not reach the registry ${this.ref.registry} (${e.cause ?? e.message}); check the reference and the network.`,
      );
    });
    if (res.status === 401 && !this.authorization) {
      await res.body?.cancel();
      this.authorization = await this.authorize(res.headers.get('www-authenticate') ?? '');
      res = await send();
    }
    if (!res.ok) {
      await res.body?.cancel();
      const why =
        res.status === 401 || res.status === 403
          ? 'the registry refused the credentials (log in with docker login or podman login, which write the Docker config file)'
          : res.status === 404
            ? 'the registry has no such image or tag'
            : `the registry answered ${res.status}`;
      throw new PaddockError(
        res.status === 404 ? 'NOT_FOUND' : 'UPSTREAM_ERROR',
        `Could not pull ${path} of ${this.ref.registry}/${this.ref.repository}: ${why}.`,
      );
    }
    return res;
  }

  private async authorize(challenge: string): Promise<string> {
    if (/^basic/i.test(challenge)) {
      if (!this.basic)
        throw new PaddockError(
          'UPSTREAM_ERROR',
          `The registry ${this.ref.registry} needs credentials; log in (docker login ${this.ref.registry}) and pull again.`,
        );
      return `Basic ${this.basic}`;
    }
    const params = Object.fromEntries([...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (!/^bearer/i.test(challenge) || !params.realm)
      throw new PaddockError(
        'UPSTREAM_ERROR',
        `The registry ${this.ref.registry} asks for an authentication Paddock does not speak ("${challenge.slice(0, 80)}").`,
      );
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set('service', params.service);
    url.searchParams.set('scope', params.scope ?? `repository:${this.ref.repository}:pull`);
    const res = await fetch(url, { headers: this.basic ? { authorization: `Basic ${this.basic}` } : {} });
    if (!res.ok)
      throw new PaddockError(
        'UPSTREAM_ERROR',
        `The registry's token service refused (${res.status}); log in with docker login and pull again.`,
      );
    const body = (await res.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw new PaddockError('UPSTREAM_ERROR', "The registry's token service gave no token.");
    return `Bearer ${token}`;
  }
}

/** Pulls `refText` into the store as `name`. */
export async function pullImage(
  store: ImageStore,
  refText: string,
  name: string,
  progress: (line: string) => void = () => undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ImageRecord> {
  const ref = parseImageRef(refText);
  const client = new RegistryClient(ref, dockerCredentials(ref.registry, env));
  const work = store.scratch();
  try {
    mkdirSync(join(work, 'blobs', 'sha256'), { recursive: true });
    const saveBlob = async (digest: string, bytes: Buffer) => {
      writeFileSync(join(work, 'blobs', 'sha256', digest.replace(/^sha256:/, '')), bytes);
    };
    let res = await client.get(`/manifests/${ref.reference}`, ACCEPT);
    let body = Buffer.from(await res.arrayBuffer());
    let type = res.headers.get('content-type') ?? '';
    let manifest = JSON.parse(body.toString('utf8')) as {
      mediaType?: string;
      manifests?: { digest: string; mediaType?: string; platform?: { architecture?: string; os?: string } }[];
      config?: { digest: string };
      layers?: { digest: string; size?: number }[];
    };
    if (manifest.manifests) {
      const arch = hostArchitecture();
      const chosen = manifest.manifests.find(
        (m) => m.platform?.architecture === arch && (m.platform.os ?? 'linux') === 'linux',
      );
      if (!chosen) throw new PaddockError('NOT_FOUND', `${refText} has no image for linux/${arch}.`);
      res = await client.get(`/manifests/${chosen.digest}`, ACCEPT);
      body = Buffer.from(await res.arrayBuffer());
      type = res.headers.get('content-type') ?? chosen.mediaType ?? '';
      manifest = JSON.parse(body.toString('utf8'));
    }
    if (!manifest.config || !manifest.layers)
      throw new PaddockError(
        'UPSTREAM_ERROR',
        `${refText}: the registry sent a manifest without config or layers.`,
      );
    const manifestDigest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    await saveBlob(manifestDigest, body);
    const blobs = [manifest.config, ...manifest.layers];
    for (const [i, blob] of blobs.entries()) {
      if (!/^sha256:[a-f0-9]{64}$/.test(blob.digest))
        throw new PaddockError('UPSTREAM_ERROR', `${refText}: a blob has an unsupported digest.`);
      progress(
        i === 0 ? 'config' : `layer ${i}/${blobs.length - 1} ${blob.digest.slice(7, 19)}: downloading`,
      );
      const r = await client.get(`/blobs/${blob.digest}`);
      if (!r.body) throw new PaddockError('UPSTREAM_ERROR', `${refText}: the registry sent an empty blob.`);
      await pipeline(
        Readable.fromWeb(r.body as never),
        createWriteStream(join(work, 'blobs', 'sha256', blob.digest.slice(7))),
      );
    }
    writeFileSync(
      join(work, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        manifests: [
          {
            mediaType: type.split(';')[0] || manifest.mediaType,
            digest: manifestDigest,
            size: body.length,
            annotations: { 'org.opencontainers.image.ref.name': refText },
          },
        ],
      }),
    );
    writeFileSync(join(work, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
    const source = await readImageDir(work);
    return await store.install(name, source, { kind: 'registry', ref: refText }, progress);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
