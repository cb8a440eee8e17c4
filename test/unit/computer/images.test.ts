/**
 * The parts of images that need no sandbox: references and names, the id map, the profile
 * schema, availability with the command that builds an image, and — as root — unpacking a
 * layer (whiteouts, devices, owners) and Paddock's top layer, and archives that point outside
 * themselves.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { archiveImageName } from '../../../src/computer/images/archive.js';
import { debianImageName } from '../../../src/computer/images/debian.js';
import { hostIdOf, IMAGE_AGENT_ID, IMAGE_ID_BASE, imageIdMapText } from '../../../src/computer/images/ids.js';
import { unpackLayer } from '../../../src/computer/images/layer.js';
import { readImageDir } from '../../../src/computer/images/oci.js';
import { ProfileImages } from '../../../src/computer/images/profile-image.js';
import { parseImageRef, refImageName } from '../../../src/computer/images/registry.js';
import { ImageStore } from '../../../src/computer/images/store.js';
import { APT_SANDBOX_FILE, writeTopLayer } from '../../../src/computer/images/top-layer.js';
import { ProfileCatalog } from '../../../src/computer/profiles.js';
import { computerSchema, profileSchema } from '../../../src/config/computer-schema.js';

const ids = { agentHostId: 64_000, jobHostId: 64_001 };
const asRoot = process.getuid?.() === 0 ? false : 'needs root (owners of the image id range)';
const scratch = mkdtempSync(join(tmpdir(), 'paddock-images-unit-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('image references and names', () => {
  it('parses registry references the way Docker does, and refuses what is not one', () => {
    assert.deepEqual(parseImageRef('localhost:5000/team/tools:1'), {
      registry: 'localhost:5000',
      repository: 'team/tools',
      reference: '1',
    });
    assert.deepEqual(parseImageRef('debian'), {
      registry: 'registry-1.docker.io',
      repository: 'library/debian',
      reference: 'latest',
    });
    const digest = `sha256:${'a'.repeat(64)}`;
    assert.equal(parseImageRef(`ghcr.io/org/app@${digest}`).reference, digest);
    for (const bad of ['Team/App', 'a b', 'ghcr.io/x@sha256:short', '../etc', ''])
      assert.throws(() => parseImageRef(bad), /is not an image reference/, bad);
  });

  it('derives store names from references, archives and Debian specs, stable under package order', () => {
    assert.equal(refImageName('127.0.0.1:5000/paddock/busy:1'), '127.0.0.1-5000-paddock-busy-1');
    assert.equal(archiveImageName('/x/images/Node22.tar'), 'node22');
    const a = debianImageName({ suite: 'bookworm', packages: ['git', 'curl'], variant: 'apt' });
    assert.equal(a, debianImageName({ suite: 'bookworm', packages: ['curl', 'git', 'git'], variant: 'apt' }));
    assert.notEqual(a, debianImageName({ suite: 'bookworm', packages: ['curl'], variant: 'apt' }));
    assert.match(a, /^debian-bookworm-[0-9a-f]{10}$/);
  });
});

describe('image ids', () => {
  it("maps the image's ids 0 … 65535 and the agent, each once, with root and the agent on different host ids", () => {
    const lines = imageIdMapText(ids)
      .trim()
      .split('\n')
      .map((l) => l.split(' ').map(Number) as [number, number, number]);
    const inner = new Set<number>();
    const outer = new Set<number>();
    for (const [i, o, n] of lines)
      for (let k = 0; k < n; k++) {
        assert.ok(!inner.has(i + k) && !outer.has(o + k), `id ${i + k} mapped twice`);
        inner.add(i + k);
        outer.add(o + k);
      }
    assert.equal(inner.size, 65_537);
    assert.ok(inner.has(IMAGE_AGENT_ID));
    assert.ok(!outer.has(0), 'host root is never mapped');
    assert.equal(hostIdOf(0, ids), IMAGE_ID_BASE);
    assert.equal(hostIdOf(1000, ids), ids.jobHostId);
    assert.equal(hostIdOf(70_000, ids), IMAGE_ID_BASE + 65_534, 'an id outside the range is nobody');
    const agentLine = lines.find(([i]) => i === IMAGE_AGENT_ID);
    assert.deepEqual(agentLine, [IMAGE_AGENT_ID, ids.agentHostId, 1]);
  });
});

describe('profiles with an image', () => {
  it('accepts the three image forms and refuses root without an image, bad packages and a browser image', () => {
    for (const image of [
      { debian: { suite: 'bookworm', packages: ['nodejs', 'python3-pip'] } },
      { oci: { archive: './images/node22.tar' } },
      { oci: { ref: 'localhost:5000/x/y:1' } },
      { name: 'node22' },
    ])
      assert.equal(profileSchema.safeParse({ id: 'p', name: 'P', image, user: 'root' }).success, true);
    const bad = (p: Record<string, unknown>) => profileSchema.safeParse({ id: 'p', name: 'P', ...p }).success;
    assert.equal(bad({ user: 'root' }), false);
    assert.equal(bad({ image: { debian: { suite: 'bookworm', packages: ['rm -rf /'] } } }), false);
    assert.equal(bad({ image: { name: 'x' }, backend: 'browser' }), false);
    assert.equal(bad({ image: { debian: { suite: 'bookworm' }, oci: { ref: 'x' } } }), false);
    assert.equal(profileSchema.parse({ id: 'p', name: 'P' }).user, 'guest');
  });

  it('an image not in the store makes its profile unavailable, naming the command that builds it', () => {
    const config = computerSchema.parse({
      profiles: [{ id: 'deb', name: 'Deb', image: { debian: { suite: 'bookworm' } }, user: 'root' }],
    });
    const store = new ImageStore(join(scratch, 'empty-store'), ids).open();
    const images = new ProfileImages(store, scratch, () => null);
    const catalog = new ProfileCatalog(
      config.profiles,
      () => true,
      false,
      () => null,
      images,
    );
    const deb = catalog.list().find((p) => p.id === 'deb')!;
    assert.equal(deb.available, false);
    assert.match(deb.unavailableReason ?? '', /is not built yet; run "paddock images build deb"/);
    assert.equal(deb.image?.built, false);
    assert.equal(deb.image?.user, 'root');
    assert.match(deb.image?.source ?? '', /Debian bookworm/);
    const shell = catalog.list().find((p) => p.id === 'shell')!;
    assert.equal(shell.image, null, "a profile on the host's directories has no image");
    const unsupported = new ProfileCatalog(
      config.profiles,
      () => true,
      false,
      () => null,
      new ProfileImages(store, scratch, () => 'Paddock does not run as root'),
    );
    assert.match(unsupported.availability(unsupported.get('deb')).reason ?? '', /does not run as root/);
  });
});

describe('layers and archives on disk', { skip: asRoot }, () => {
  it('unpacks a layer with whiteouts as overlay whiteouts, drops devices, and shifts every owner once', async () => {
    const src = join(scratch, 'layer-src');
    mkdirSync(join(src, 'etc'), { recursive: true });
    mkdirSync(join(src, 'opt', 'opaque'), { recursive: true });
    writeFileSync(join(src, 'etc', '.wh.gone'), '');
    writeFileSync(join(src, 'opt', 'opaque', '.wh..wh..opq'), '');
    writeFileSync(join(src, 'opt', 'opaque', 'kept'), 'k');
    writeFileSync(join(src, 'etc', 'one'), '1');
    linkSync(join(src, 'etc', 'one'), join(src, 'etc', 'same'));
    execFileSync('mknod', [join(src, 'etc', 'disk'), 'b', '8', '0']);
    execFileSync('chown', ['-h', '1000:33', join(src, 'etc', 'one')]);
    const tar = join(scratch, 'layer.tar');
    execFileSync('tar', ['-c', '--numeric-owner', '-f', tar, '-C', src, '.']);
    const out = join(scratch, 'layer-out');
    const found = await unpackLayer(tar, 'none', out, ids);
    const gone = lstatSync(join(out, 'etc', 'gone'));
    assert.ok(gone.isCharacterDevice() && gone.rdev === 0, 'a whiteout is a 0/0 character device');
    assert.throws(() => lstatSync(join(out, 'etc', '.wh.gone')));
    assert.throws(() => lstatSync(join(out, 'etc', 'disk')), 'a device of the archive is dropped');
    const opaque = execFileSync(
      'getfattr',
      ['--only-values', '-n', 'trusted.overlay.opaque', join(out, 'opt', 'opaque')],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(opaque, 'y');
    const one = lstatSync(join(out, 'etc', 'one'));
    assert.equal(one.uid, ids.jobHostId, 'uid 1000 is the guest account');
    assert.equal(one.gid, IMAGE_ID_BASE + 33);
    assert.equal(lstatSync(join(out, 'etc', 'same')).uid, ids.jobHostId, 'a hard link is shifted once');
    assert.equal(lstatSync(join(out, 'opt', 'opaque', 'kept')).uid, IMAGE_ID_BASE);
    assert.equal(found.whiteouts, 2);
  });

  it("Paddock's top layer adds the guest account only where the image has no uid 1000, and apt's setting only where there is apt", () => {
    const lower = join(scratch, 'lower');
    mkdirSync(join(lower, 'etc', 'apt'), { recursive: true });
    writeFileSync(join(lower, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
    writeFileSync(join(lower, 'etc', 'group'), 'root:x:0:\n');
    writeTopLayer(join(scratch, 'top1'), [lower], ids);
    assert.match(
      readFileSync(join(scratch, 'top1', 'etc', 'passwd'), 'utf8'),
      /\nagent:x:1000:1000:Paddock agent:\/workspace:\/bin\/sh\n$/,
    );
    assert.match(readFileSync(join(scratch, 'top1', APT_SANDBOX_FILE), 'utf8'), /APT::Sandbox::User "root";/);
    const node = join(scratch, 'node-lower');
    mkdirSync(join(node, 'etc'), { recursive: true });
    writeFileSync(
      join(node, 'etc', 'passwd'),
      'root:x:0:0::/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n',
    );
    writeTopLayer(join(scratch, 'top2'), [node], ids);
    assert.equal(
      readFileSync(join(scratch, 'top2', 'etc', 'passwd'), 'utf8'),
      'root:x:0:0::/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n',
    );
    assert.throws(() => lstatSync(join(scratch, 'top2', APT_SANDBOX_FILE)));
  });

  it('an archive whose manifest names a path outside it, or a link, is refused', async () => {
    const dir = join(scratch, 'escape');
    mkdirSync(join(dir, 'blobs', 'sha256'), { recursive: true });
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify([{ Config: '../../etc/passwd', Layers: [] }]));
    await assert.rejects(readImageDir(dir), /outside the archive/);
    symlinkSync('/etc/passwd', join(dir, 'config.json'));
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify([{ Config: 'config.json', Layers: [] }]));
    await assert.rejects(readImageDir(dir), /not a plain file/);
    await assert.rejects(readImageDir(join(scratch, 'layer-src')), /not an image archive/);
  });
});
