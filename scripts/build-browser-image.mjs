#!/usr/bin/env node
// Builds the browser computer's image from Debian packages: an i386 kernel (686 flavour, no PAE),
// a static busybox as the whole userland, and SeaBIOS for the emulator. Nothing is fetched when a
// computer boots; this script is the only place packages are downloaded (with apt-get, as root, or
// from .deb files already in PADDOCK_BROWSER_DEBS).
//   node scripts/build-browser-image.mjs [--if-stale] [outDir]   (default: browser-image/ in the repository)
// --if-stale: do nothing when the image there was built from the current guest files.
// Output: bzImage, initrd.img (gzip'd newc cpio), bios.bin, vgabios.bin and manifest.json with the
// size and sha256 of each, which the server checks before offering a browser profile.
// Plain JavaScript on node builtins: it runs from scripts/setup.mjs before dependencies exist.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const ifStale = args.includes('--if-stale');
const out = args.find((a) => !a.startsWith('--')) ?? join(root, 'browser-image');
const guestDir = join(root, 'scripts', 'browser-image');
/**
 * Bumped when the guest files or the layout change, so an older image is rebuilt; the server
 * accepts only the version it speaks (IMAGE_VERSION in src/computer/backend/browser/image.ts).
 */
const IMAGE_VERSION = 6;

function say(line) {
  process.stderr.write(`build-browser-image: ${line}\n`);
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  if (r.status !== 0) {
    throw new Error(
      `\`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.signal}): ${(r.stderr ?? '').trim()}`,
    );
  }
  return r.stdout ?? '';
}

/** The .deb files: from PADDOCK_BROWSER_DEBS, else downloaded with apt-get into `dir`. */
function fetchDebs(dir) {
  const given = process.env.PADDOCK_BROWSER_DEBS;
  if (given)
    return readdirSync(given)
      .filter((f) => f.endsWith('.deb'))
      .map((f) => join(given, f));
  if (process.getuid?.() !== 0) {
    throw new Error(
      'downloading the i386 packages needs root (dpkg --add-architecture i386 and apt-get); run this script as root, or put the .deb files of linux-image-686, busybox-static:i386 and seabios in a folder named by PADDOCK_BROWSER_DEBS',
    );
  }
  const foreign = run('dpkg', ['--print-foreign-architectures']).split('\n');
  const hasList = () =>
    spawnSync('apt-cache', ['show', 'linux-image-686:i386'], { stdio: 'ignore' }).status === 0;
  if (!foreign.includes('i386') || !hasList()) {
    say('adding the i386 architecture to dpkg and updating the package lists');
    if (!foreign.includes('i386')) run('dpkg', ['--add-architecture', 'i386']);
    run('apt-get', ['update', '-qq']);
  }
  const depends = run('apt-cache', ['depends', 'linux-image-686:i386']);
  const kernel = /Depends: (linux-image-\d[^\s]*-686:i386)/.exec(depends)?.[1];
  if (!kernel) throw new Error(`no 686 kernel package behind linux-image-686:i386:\n${depends}`);
  const pkgs = [kernel, 'busybox-static:i386', 'seabios'];
  say(`downloading ${pkgs.join(' ')}`);
  run('chmod', ['777', dir]);
  run('apt-get', ['download', '-qq', ...pkgs], { cwd: dir });
  return readdirSync(dir)
    .filter((f) => f.endsWith('.deb'))
    .map((f) => join(dir, f));
}

/** One newc cpio entry. */
function cpioEntry(name, mode, data, ino) {
  const fields = [ino, mode, 0, 0, 1, 0, data.length, 0, 0, 0, 0, name.length + 1, 0];
  const header = `070701${fields.map((f) => f.toString(16).padStart(8, '0')).join('')}`;
  const head = Buffer.concat([Buffer.from(header), Buffer.from(name), Buffer.alloc(1)]);
  const pad = (n) => Buffer.alloc((4 - (n % 4)) % 4);
  return Buffer.concat([head, pad(head.length), data, pad(data.length)]);
}

function initramfs(busybox) {
  const dirs = [
    'bin',
    'sbin',
    'usr',
    'usr/bin',
    'dev',
    'proc',
    'sys',
    'tmp',
    'run',
    'home',
    'home/user',
    'etc',
  ];
  const files = [
    ['init', 0o100755, readFileSync(join(guestDir, 'init'))],
    ['agent.sh', 0o100644, readFileSync(join(guestDir, 'agent.sh'))],
    ['bin/busybox', 0o100755, busybox],
    ['etc/passwd', 0o100644, Buffer.from('root:x:0:0:root:/home/user:/bin/sh\n')],
    [
      'etc/profile',
      0o100644,
      Buffer.from('export PS1="\\w \\$ " PATH=/bin:/sbin:/usr/bin HOME=/home/user\n'),
    ],
  ];
  let ino = 1;
  const parts = [
    ...dirs.map((d) => cpioEntry(d, 0o40755, Buffer.alloc(0), ino++)),
    ...files.map(([n, m, data]) => cpioEntry(n, m, data, ino++)),
    cpioEntry('TRAILER!!!', 0, Buffer.alloc(0), 0),
  ];
  return gzipSync(Buffer.concat(parts), { level: 9 });
}

/** Hash of everything the image is made from here (guest files and this script). */
function sourceHash() {
  const h = createHash('sha256').update(String(IMAGE_VERSION));
  for (const f of [join(guestDir, 'init'), join(guestDir, 'agent.sh'), fileURLToPath(import.meta.url)]) {
    h.update(readFileSync(f));
  }
  return h.digest('hex');
}

/** Whether the image in `out` was built from the current sources. */
function upToDate() {
  try {
    return JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')).source === sourceHash();
  } catch {
    return false;
  }
}

function main() {
  if (ifStale && upToDate()) return;
  const work = mkdtempSync(join(tmpdir(), 'paddock-browser-image-'));
  try {
    const debs = fetchDebs(work);
    const x = join(work, 'x');
    for (const deb of debs) run('dpkg-deb', ['-x', deb, x]);
    const vmlinuz = readdirSync(join(x, 'boot')).find((f) => /^vmlinuz-.*-686$/.test(f));
    if (!vmlinuz) throw new Error('the kernel package has no boot/vmlinuz-*-686');
    const image = {
      bzImage: readFileSync(join(x, 'boot', vmlinuz)),
      'initrd.img': initramfs(readFileSync(join(x, 'bin', 'busybox'))),
      'bios.bin': readFileSync(join(x, 'usr/share/seabios/bios.bin')),
      'vgabios.bin': readFileSync(join(x, 'usr/share/seabios/vgabios-stdvga.bin')),
    };
    const staging = `${out}.tmp-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    const manifest = {
      version: IMAGE_VERSION,
      source: sourceHash(),
      kernel: vmlinuz.replace(/^vmlinuz-/, ''),
      files: {},
    };
    for (const [name, data] of Object.entries(image)) {
      writeFileSync(join(staging, name), data);
      manifest.files[name] = { bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
    }
    writeFileSync(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    rmSync(out, { recursive: true, force: true });
    renameSync(staging, out);
    say(`wrote ${out} (kernel ${manifest.kernel})`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

try {
  main();
} catch (e) {
  say(e instanceof Error ? e.message : String(e));
  process.exit(1);
}
