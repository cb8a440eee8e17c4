#!/usr/bin/env node
// Boots the browser computer's image once, here, in the same emulator the dock page runs (v86,
// under Node), and saves the machine's state just after the guest agent announced itself. A page
// then restores that state instead of booting Linux under emulation (tens of seconds to minutes),
// and the server wakes the restored agent with the time and fresh randomness (`hello`).
//   node scripts/snapshot-browser-image.mjs [--if-stale] [imageDir]   (default: browser-image/)
// --if-stale: do nothing when the image already holds a snapshot of its current files.
// Writes state.bin into the image and its size, sha256, memory size and origin into manifest.json.
// The image stays usable without it: a page boots cold when the manifest lists no state.
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const ifStale = args.includes('--if-stale');
const dir = args.find((a) => !a.startsWith('--')) ?? join(root, 'browser-image');
const machinePath = join(root, 'scripts', 'browser-image', 'machine.json');
/** The longest a boot may take here before the snapshot is given up (a loaded 2-core machine). */
const BOOT_TIMEOUT_MS = 600_000;
/** Quiet time after the agent's ready line, so the guest's shells are all waiting on their ports. */
const SETTLE_MS = 1000;

function say(line) {
  process.stderr.write(`snapshot-browser-image: ${line}\n`);
}

function sha256(data) {
  return createHash('sha256').update(data).digest('hex');
}

/** What the snapshot is made from: the image's files, the machine, this script and the emulator. */
function origin(manifest, v86Version) {
  return sha256(
    [
      manifest.source,
      readFileSync(machinePath, 'utf8'),
      readFileSync(fileURLToPath(import.meta.url)),
      v86Version,
    ].join('\0'),
  );
}

function arrayBuffer(path) {
  const b = readFileSync(path);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
}

async function main() {
  const manifestPath = join(dir, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const require = createRequire(import.meta.url);
  const v86Dir = dirname(require.resolve('v86'));
  const v86Version = JSON.parse(readFileSync(join(v86Dir, '..', 'package.json'), 'utf8')).version;
  const from = origin(manifest, v86Version);
  if (ifStale && manifest.state?.origin === from) return;
  const machine = JSON.parse(readFileSync(machinePath, 'utf8'));
  const { V86 } = await import(join(v86Dir, 'libv86.mjs'));
  const started = performance.now();
  say(`booting the image to snapshot it (${machine.memoryMb} MiB; a minute or more on a busy machine)`);
  const emulator = new V86({
    ...machine.emulator,
    wasm_path: join(v86Dir, 'v86.wasm'),
    memory_size: machine.memoryMb * 1024 * 1024,
    bios: { buffer: arrayBuffer(join(dir, 'bios.bin')) },
    vga_bios: { buffer: arrayBuffer(join(dir, 'vgabios.bin')) },
    bzimage: { buffer: arrayBuffer(join(dir, 'bzImage')) },
    initrd: { buffer: arrayBuffer(join(dir, 'initrd.img')) },
    cmdline: machine.cmdline,
    autostart: true,
  });
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the guest agent did not announce itself within ${BOOT_TIMEOUT_MS / 1000} s`)),
        BOOT_TIMEOUT_MS,
      );
      let line = '';
      emulator.add_listener('serial1-output-byte', (byte) => {
        if (byte !== 10) {
          line += String.fromCharCode(byte);
          return;
        }
        if (line.startsWith('@0 ready')) {
          clearTimeout(timer);
          setTimeout(resolve, SETTLE_MS);
        }
        line = '';
      });
    });
    const state = Buffer.from(await emulator.save_state());
    const staging = join(dir, `state.bin.tmp-${process.pid}`);
    writeFileSync(staging, state);
    renameSync(staging, join(dir, 'state.bin'));
    manifest.state = {
      file: 'state.bin',
      bytes: state.length,
      sha256: sha256(state),
      memoryMb: machine.memoryMb,
      origin: from,
    };
    const manifestStaging = `${manifestPath}.tmp-${process.pid}`;
    writeFileSync(manifestStaging, `${JSON.stringify(manifest, null, 2)}\n`);
    renameSync(manifestStaging, manifestPath);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    say(
      `wrote ${join(dir, 'state.bin')} (${(state.length / 1048576).toFixed(1)} MiB, booted in ${seconds} s)`,
    );
  } finally {
    await emulator.destroy();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    say(`${e instanceof Error ? e.message : String(e)}; pages will boot the image cold`);
    process.exit(1);
  },
);
