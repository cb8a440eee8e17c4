/**
 * Container images with real tools: a tiny image (busybox) written as an OCI layout by the
 * test, turned into the archives users bring by Debian's skopeo, imported with `paddock images
 * import`, pushed to Debian's docker-registry on loopback and pulled back with credentials from a
 * Docker config file. Layers are verified by digest, whiteouts applied, layers stored once, and
 * a damaged layer is refused with nothing left behind.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { archiveImageName, importArchive } from '../../src/computer/images/archive.js';
import { ImageStore, imageIdsOf } from '../../src/computer/images/index.js';
import { pullImage } from '../../src/computer/images/registry.js';
import { computerSchema } from '../../src/config/computer-schema.js';
import { imageSkipReason } from '../helpers/images.js';
import { corrupt, fillBusybox, layerDir, skopeo, writeOciLayout } from '../helpers/oci-build.js';
import { runCli, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import {
  launchRunning,
  readTerminalUntil,
  runUntilExit,
  toolCaller,
  withComputer,
} from '../unit/computer/fixture.js';

const skip =
  imageSkipReason() ||
  (['/usr/bin/skopeo', '/usr/bin/docker-registry', '/usr/bin/busybox'].find((p) => !existsSync(p))
    ? 'skopeo, docker-registry or busybox-static is not installed'
    : false);
const ids = imageIdsOf(computerSchema.parse({}));

/** Two layers: busybox with /etc/removed and /opt/gone/a, then whiteouts of both and /opt/gone/new. */
function busyboxLayout(root: string): string {
  const base = layerDir(root, 'base');
  fillBusybox(base);
  writeFileSync(join(base, 'etc', 'removed'), 'old\n');
  mkdirSync(join(base, 'opt', 'gone'), { recursive: true });
  writeFileSync(join(base, 'opt', 'gone', 'a'), 'a\n');
  writeFileSync(join(base, 'etc', 'motd'), 'from the base layer\n');
  const top = layerDir(root, 'top');
  mkdirSync(join(top, 'etc'));
  writeFileSync(join(top, 'etc', '.wh.removed'), '');
  mkdirSync(join(top, 'opt', 'gone'), { recursive: true });
  writeFileSync(join(top, 'opt', 'gone', '.wh..wh..opq'), '');
  writeFileSync(join(top, 'opt', 'gone', 'new'), 'new\n');
  const layout = join(root, 'layout');
  writeOciLayout(layout, [base, top], ['GREETING=hello']);
  return layout;
}

const busyProfile = (id: string, image: string, user: 'guest' | 'root' = 'guest') => ({
  id,
  name: id,
  image: { name: image },
  user,
  requires: ['sh'],
  limits: { diskMb: 64 },
});

/** What a job sees of the image's whiteouts and accounts. */
const PROBE = 'id; cat /etc/motd; ls /etc/removed 2>&1; ls /opt/gone; echo "$GREETING"';

describe('container images (OCI archives and a registry)', { concurrency: false, skip }, () => {
  let root = '';
  let layout = '';
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'paddock-oci-'));
    layout = busyboxLayout(root);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('paddock images import stores an oci-archive made by skopeo with whiteouts applied, and a computer boots from it', async () => {
    const archive = join(root, 'busy.tar');
    skopeo(`oci:${layout}:latest`, `oci-archive:${archive}`);
    const project = tempProject(`computer:\n  imagesDir: ${join(root, 'store-cli')}\n`);
    try {
      const imported = await runCli(project, ['images', 'import', archive, '--name', 'busy']);
      assert.equal(imported.code, 0, imported.stderr);
      assert.match(imported.stdout, /Imported busy \(2 layers/);
      assert.match(imported.stderr, /verified 2 layers/);
      const listed = await runCli(project, ['images', 'list', '--json']);
      assert.equal(listed.code, 0, listed.stderr);
      const images = JSON.parse(listed.stdout).images as { name: string; origin: { kind: string } }[];
      assert.deepEqual(
        images.map((i) => [i.name, i.origin.kind]),
        [['busy', 'archive']],
      );
    } finally {
      project.cleanup();
    }
    await withComputer(
      { imagesDir: join(root, 'store-cli'), computer: { profiles: [busyProfile('busy', 'busy')] } },
      async ({ manager, ctx }) => {
        await launchRunning(manager, 'busy');
        const r = await runUntilExit(manager, PROBE);
        assert.equal(r.exitCode, 0, r.stderr);
        assert.match(r.stdout, /^uid=1000\(agent\) gid=1000\(agent\)/);
        assert.match(r.stdout, /from the base layer/);
        assert.match(r.stdout, /ls: \/etc\/removed: No such file or directory/);
        assert.match(r.stdout, /\nnew\n/, 'the opaque directory hides the base layer');
        assert.doesNotMatch(r.stdout, /\na\n/);
        assert.match(r.stdout, /\nhello\n/, "the image config's environment reaches jobs");
        // terminals need a native library the image lacks: the agent brings its own
        const call = toolCaller(manager, ctx);
        const terminalId = String((await call('create_terminal', {})).terminalId);
        await call('send_terminal_input', { terminalId, text: 'echo "T=$(id -u)"; echo DONE\n' });
        const { text } = await readTerminalUntil(call, terminalId, /^DONE\r?$/m, 'the terminal to answer');
        assert.match(text, /^T=1000\r?$/m);
      },
    );
  });

  it('paddock images list names a profile whose image is not built with the command that builds it, and build imports its archive', async () => {
    const archive = join(root, 'images', 'busy-profile.tar');
    mkdirSync(join(root, 'images'), { recursive: true });
    skopeo(`oci:${layout}:latest`, `oci-archive:${archive}`);
    const project = tempProject(
      [
        'computer:',
        `  imagesDir: ${join(root, 'store-build')}`,
        '  profiles:',
        '    - id: busyarch',
        '      name: Busybox from an archive',
        `      image: { oci: { archive: ${archive} } }`,
        '      requires: [sh]',
        '',
      ].join('\n'),
    );
    try {
      const before = await runCli(project, ['images', 'list']);
      assert.equal(before.code, 0, before.stderr);
      assert.match(
        before.stdout,
        /Profile busyarch: its image busy-profile is not built; run "paddock images build busyarch"/,
      );
      const built = await runCli(project, ['images', 'build', 'busyarch']);
      assert.equal(built.code, 0, built.stderr);
      assert.match(built.stdout, /^Built busy-profile for busyarch in \d+ s/);
      const after = await runCli(project, ['images', 'list', '--json']);
      const listed = JSON.parse(after.stdout) as {
        images: { name: string; profiles: string[] }[];
        unbuilt: unknown[];
      };
      assert.deepEqual(
        listed.images.map((i) => [i.name, i.profiles]),
        [['busy-profile', ['busyarch']]],
      );
      assert.deepEqual(listed.unbuilt, []);
      const bad = await runCli(project, ['images', 'build', 'nope']);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /No profile "nope"/);
    } finally {
      project.cleanup();
    }
  });

  it('a Docker archive of the same image imports too, and its layers are stored once', async () => {
    const dir = join(root, 'store-shared');
    const store = new ImageStore(dir, ids).open();
    const oci = join(root, 'busy-oci.tar');
    const docker = join(root, 'busy-docker.tar');
    skopeo(`oci:${layout}:latest`, `oci-archive:${oci}`);
    skopeo(`oci:${layout}:latest`, `docker-archive:${docker}:paddock/busy:1`);
    await importArchive(store, oci, 'busy-oci');
    const layersAfterFirst = readdirSync(store.layersDir).filter((n) => !n.endsWith('.json'));
    const lines: string[] = [];
    const second = await importArchive(store, docker, archiveImageName(docker), (l) => lines.push(l));
    assert.equal(second.name, 'busy-docker');
    assert.deepEqual(
      readdirSync(store.layersDir).filter((n) => !n.endsWith('.json')),
      layersAfterFirst,
    );
    assert.equal(lines.filter((l) => l.includes('already stored')).length, 2, lines.join('\n'));
    assert.deepEqual(second.layers, store.get('busy-oci')?.layers);
  });

  it('a layer that does not match its digest is refused with a clear message, and nothing of the import stays', async () => {
    const dir = join(root, 'store-corrupt');
    const store = new ImageStore(dir, ids).open();
    const damaged = join(root, 'damaged-layout');
    rmSync(damaged, { recursive: true, force: true });
    skopeo(`oci:${layout}:latest`, `oci:${damaged}:latest`);
    const index = JSON.parse(readFileSync(join(damaged, 'index.json'), 'utf8'));
    const manifest = JSON.parse(
      readFileSync(join(damaged, 'blobs', 'sha256', index.manifests[0].digest.slice(7)), 'utf8'),
    );
    corrupt(join(damaged, 'blobs', 'sha256', manifest.layers[1].digest.slice(7)));
    // an oci-archive is a tar of the layout (skopeo itself would refuse to copy the damaged blob)
    const archive = join(root, 'damaged.tar');
    execFileSync('tar', ['-c', '-f', archive, '-C', damaged, '.']);
    await assert.rejects(importArchive(store, archive, 'damaged'), (e: Error) => {
      assert.match(e.message, /Layer 2 of the image does not match its digest/);
      assert.match(e.message, /Nothing was imported/);
      return true;
    });
    assert.equal(store.get('damaged'), null);
    assert.deepEqual(readdirSync(store.layersDir), [], 'no layer of the refused image was stored');
    assert.deepEqual(readdirSync(store.tmpDir), [], 'no scratch directory stays');
    assert.deepEqual(readdirSync(store.imagesDir), []);
  });

  it('paddock images pull fetches from a registry on loopback with the Docker config file credentials, and the image boots', async () => {
    const registry = await startRegistry(join(root, 'registry'));
    const front = await basicAuthFront(registry.port, 'paddock', 's3cret');
    try {
      skopeo(`oci:${layout}:latest`, `docker://127.0.0.1:${registry.port}/paddock/busy:1`);
      const dir = join(root, 'store-pull');
      const store = new ImageStore(dir, ids).open();
      const ref = `127.0.0.1:${front.port}/paddock/busy:1`;
      const dockerConfig = join(root, 'docker');
      // without credentials the registry refuses, with a message that says how to log in
      await assert.rejects(
        pullImage(store, ref, 'pulled', () => undefined, { DOCKER_CONFIG: join(root, 'none') }),
        /needs credentials; log in/,
      );
      assert.deepEqual(readdirSync(store.tmpDir), []);
      mkdirSync(dockerConfig, { recursive: true });
      writeFileSync(
        join(dockerConfig, 'config.json'),
        JSON.stringify({
          auths: { [`127.0.0.1:${front.port}`]: { auth: Buffer.from('paddock:s3cret').toString('base64') } },
        }),
      );
      const record = await pullImage(store, ref, 'pulled', () => undefined, { DOCKER_CONFIG: dockerConfig });
      assert.equal(record.origin.kind, 'registry');
      assert.equal(record.layers.length, 2);
      assert.ok(front.authorized() > 0, 'the blobs were fetched with the credentials');
    } finally {
      front.server.close();
      registry.child.kill('SIGKILL');
    }
    await withComputer(
      { imagesDir: join(root, 'store-pull'), computer: { profiles: [busyProfile('pulled', 'pulled')] } },
      async ({ manager }) => {
        await launchRunning(manager, 'pulled');
        const r = await runUntilExit(manager, PROBE);
        assert.equal(r.exitCode, 0, r.stderr);
        assert.match(r.stdout, /\nnew\n/);
      },
    );
  });

  it('paddock images rm refuses an image a running computer uses, then removes it; prune frees its layers', async () => {
    const dir = join(root, 'store-rm');
    const store = new ImageStore(dir, ids).open();
    const archive = join(root, 'busy-rm.tar');
    skopeo(`oci:${layout}:latest`, `oci-archive:${archive}`);
    await importArchive(store, archive, 'busy');
    await withComputer(
      { imagesDir: dir, computer: { profiles: [busyProfile('busy', 'busy')] } },
      async ({ manager }) => {
        await launchRunning(manager, 'busy');
        assert.throws(() => store.remove('busy'), /in use by a running computer/);
      },
    );
    await pollUntil(() => !store.inUse('busy'), 'the image to be released', 10_000);
    store.remove('busy');
    assert.equal(store.get('busy'), null);
    assert.equal(store.prune().layers, 2);
    assert.deepEqual(readdirSync(store.layersDir), []);
  });
});

/** Debian's docker-registry on a free loopback port, storing in `dir`. */
async function startRegistry(dir: string): Promise<{ child: ChildProcess; port: number }> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  const child = spawn('docker-registry', ['serve', config], { stdio: 'ignore' });
  await pollUntil(
    () =>
      fetch(`http://127.0.0.1:${port}/v2/`)
        .then((r) => r.ok)
        .catch(() => false),
    'docker-registry to listen',
    20_000,
  );
  return { child, port };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** A loopback front of the registry that asks for Basic credentials, as a private registry does. */
async function basicAuthFront(
  upstream: number,
  user: string,
  password: string,
): Promise<{ server: Server; port: number; authorized: () => number }> {
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  let authorized = 0;
  const server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="paddock-test"' }).end();
      return;
    }
    authorized++;
    const forward = request(
      {
        host: '127.0.0.1',
        port: upstream,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, host: `127.0.0.1:${upstream}` },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, authorized: () => authorized };
}
