#!/usr/bin/env node
// Set-up before `npm start`, `npm test` and `npm run bench` (their pre-scripts): everything a fresh
// clone lacks, in the order it is needed, each step skipped when already done.
//   1. Node version;  2. Debian packages (installed with apt-get as root, else the command to run
//   is printed and nothing else runs);  3. npm dependencies;  4. native modules built for this Node;
//   5. the browser computer's image (test and bench);  6. the build (dist/), redone only when a
//   source is newer than the last build.
// Plain JavaScript on node: builtins only, because node_modules may not exist yet.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installCommand, missingFor } from './system-deps.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scope = process.argv[2] ?? 'serve';
const isRoot = process.getuid?.() === 0;

function say(line) {
  process.stderr.write(`setup: ${line}\n`);
}

function fail(lines) {
  for (const line of lines) process.stderr.write(`setup: ${line}\n`);
  process.exit(1);
}

function run(cmd, args, env = process.env) {
  say(`running ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0)
    fail([
      `\`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.signal}); fix the error above and run again.`,
    ]);
}

// 1. Node
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const [major, minor] = process.versions.node.split('.').map(Number);
const [needMajor, needMinor] = pkg.engines.node
  .replace(/^>=\s*/, '')
  .split('.')
  .map(Number);
if (major < needMajor || (major === needMajor && minor < (needMinor ?? 0))) {
  fail([
    `Node ${process.versions.node} is too old: Paddock needs Node ${pkg.engines.node} (tested on 20 and 24).`,
  ]);
}

// 2. Debian packages
function describe(deps) {
  return deps.map((d) => `  ${d.pkg.padEnd(11)} provides ${d.path}: ${d.purpose}`);
}
let missing = missingFor(scope, isRoot);
if (missing.length > 0) {
  const pkgs = missing.map((d) => d.pkg);
  if (isRoot && existsSync('/usr/bin/apt-get')) {
    say(`installing missing Debian packages: ${[...new Set(pkgs)].join(' ')}`);
    for (const line of describe(missing)) say(line);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    run('apt-get', ['update', '-qq'], env);
    run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...new Set(pkgs)], env);
    missing = missingFor(scope, isRoot);
  }
  if (missing.length > 0) {
    fail([
      `missing system packages for \`${scope}\`:`,
      ...describe(missing),
      existsSync('/usr/bin/apt-get')
        ? `install them, then run the same command again:\n\n    ${installCommand(pkgs, isRoot)}\n`
        : "install the packages that provide these files (names above are Debian's), then run again.",
    ]);
  }
}

// 3. npm dependencies: present at the versions the lockfile pins (direct dependencies).
function depsOutOfDate() {
  if (!existsSync(join(root, 'node_modules'))) return ['node_modules is missing'];
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const stale = [];
  for (const name of Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })) {
    const want = lock.packages?.[`node_modules/${name}`]?.version;
    const file = join(root, 'node_modules', name, 'package.json');
    const have = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).version : undefined;
    // semver ignores build metadata: v86 publishes 0.5.462+g5f9a90f for the lockfile's 0.5.462
    if (have?.split('+')[0] !== want?.split('+')[0])
      stale.push(`${name} ${have ?? 'missing'} (lockfile: ${want})`);
  }
  return stale;
}
const stale = depsOutOfDate();
if (stale.length > 0 && lstatSync(join(root, 'node_modules'), { throwIfNoEntry: false })?.isSymbolicLink()) {
  // A shared tree (a git worktree linking another checkout's node_modules) is not ours to change.
  fail([
    `node_modules is a link to a shared tree and differs from package-lock.json: ${stale.join(', ')}`,
    'Install in the tree it links to, or replace the link with `npm install`.',
  ]);
}
if (stale.length > 0) {
  say(`npm dependencies to install: ${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ', …' : ''}`);
  run(
    'npm',
    existsSync(join(root, 'node_modules'))
      ? ['install', '--no-audit', '--no-fund']
      : ['ci', '--no-audit', '--no-fund'],
  );
}

// 4. Native modules: better-sqlite3 is compiled per Node ABI; rebuild it when Node changed.
function sqliteLoadError() {
  try {
    const Database = createRequire(join(root, 'package.json'))('better-sqlite3');
    new Database(':memory:').close();
    return undefined;
  } catch (e) {
    return e;
  }
}
const loadError = sqliteLoadError();
if (loadError) {
  say(
    `better-sqlite3 does not load on Node ${process.versions.node} (${String(loadError.message).split('\n')[0]}); rebuilding it`,
  );
  // Headers of this Node: a Node unpacked from its release archive carries include/node next to bin/.
  const prefix = dirname(dirname(process.execPath));
  const env = existsSync(join(prefix, 'include', 'node', 'node.h'))
    ? { ...process.env, npm_config_nodedir: prefix }
    : process.env;
  run('npm', ['rebuild', 'better-sqlite3'], env);
  // A fresh process: this one keeps the library it failed to load.
  const probe = "const D = require('better-sqlite3'); new D(':memory:').close();";
  const again = spawnSync(process.execPath, ['-e', probe], { cwd: root, encoding: 'utf8' });
  if (again.status !== 0)
    fail([
      `better-sqlite3 still does not load: ${again.stderr.trim().split('\n').at(-1)}`,
      'It builds from source with python3, make and g++ (apt-get install -y build-essential python3).',
    ]);
}

// 5. The browser computer's image (tests boot it in Chromium): built from Debian packages by its
//    script, which needs root for apt-get; without root the browser tests say how to build it.
//    Then its snapshot (a booted machine a page restores), made with the emulator from step 3.
if (scope !== 'serve') {
  if (isRoot) run(process.execPath, [join(root, 'scripts', 'build-browser-image.mjs'), '--if-stale']);
  else if (!existsSync(join(root, 'browser-image', 'manifest.json')))
    say(
      'the browser computer image is not built; its tests will fail until `sudo node scripts/build-browser-image.mjs` runs',
    );
  // A snapshot of the booted image lets a page restore the machine instead of booting Linux under
  // emulation. Without one a page boots cold, so a failed snapshot is reported, not fatal.
  if (existsSync(join(root, 'browser-image', 'manifest.json'))) {
    const snapshot = join(root, 'scripts', 'snapshot-browser-image.mjs');
    const r = spawnSync(process.execPath, [snapshot, '--if-stale'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) say('browser computers will boot cold: the image has no snapshot (see above)');
  }
}

// 6. The build: dist/.build-stamp is touched at the end of `npm run build`.
function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}
const stamp = join(root, 'dist', '.build-stamp');
const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
const sources = Math.max(
  ...['src', 'test', 'bench'].map((d) => newestSource(join(root, d))),
  ...['tsconfig.json', 'package.json'].map((f) => statSync(join(root, f)).mtimeMs),
);
if (sources > built) run('npm', ['run', 'build', '--silent']);
