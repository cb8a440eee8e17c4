// The Debian packages Paddock and its test suite need, shared by scripts/setup.mjs (the pre-step of
// `npm start`, `npm test` and `npm run bench`) and `paddock doctor`, so both name the same fix.
// Plain JavaScript without dependencies: it runs on a fresh clone, before `npm install`.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One system dependency: the file that must exist, the Debian package that provides it, what needs
 * it and for which command (`serve`: running Paddock; `test`: the test suite; `bench`: the bench).
 * Paths are inside /usr: the sandbox binds /usr, so a copy elsewhere on PATH does not count.
 * One path segment may be `*` (any version directory, as in /usr/lib/postgresql/15/bin).
 */
export const SYSTEM_DEPS = [
  { path: '/usr/bin/bwrap', pkg: 'bubblewrap', purpose: 'the computer sandbox', scope: 'serve' },
  {
    path: '/usr/bin/setpriv',
    pkg: 'util-linux',
    purpose: 'running computers as their own uid when Paddock runs as root',
    scope: 'serve',
    rootOnly: true,
  },
  {
    path: '/usr/sbin/mkfs.ext4',
    pkg: 'e2fsprogs',
    purpose: "each computer's disk image, which enforces its disk limit, when Paddock runs as root",
    scope: 'serve',
    rootOnly: true,
  },
  {
    path: '/usr/bin/mount',
    pkg: 'mount',
    purpose: "mounting each computer's disk image when Paddock runs as root",
    scope: 'serve',
    rootOnly: true,
  },
  {
    path: '/usr/bin/setfattr',
    pkg: 'attr',
    purpose: 'importing container images (opaque directories of their layers)',
    scope: 'serve',
    rootOnly: true,
  },
  { path: '/usr/bin/chromium', pkg: 'chromium', purpose: 'the dock tests in a real browser', scope: 'test' },
  {
    path: '/usr/bin/mmdebstrap',
    pkg: 'mmdebstrap',
    purpose: 'the Debian image the image tests boot',
    scope: 'test',
  },
  {
    path: '/usr/bin/skopeo',
    pkg: 'skopeo',
    purpose: 'the image archives and registry pushes of the image tests',
    scope: 'test',
  },
  {
    path: '/usr/bin/docker-registry',
    pkg: 'docker-registry',
    purpose: 'the registry the image pull tests run on loopback',
    scope: 'test',
  },
  {
    path: '/usr/bin/busybox',
    pkg: 'busybox-static',
    purpose: 'the tiny container image of the image tests',
    scope: 'test',
  },
  { path: '/usr/bin/jq', pkg: 'jq', purpose: 'the tool-channel tests and examples', scope: 'test' },
  { path: '/usr/bin/python3', pkg: 'python3', purpose: 'the Python client tests', scope: 'test' },
  { path: '/usr/bin/pgrep', pkg: 'procps', purpose: 'the process-family tests', scope: 'test' },
  { path: '/usr/bin/openssl', pkg: 'openssl', purpose: 'the TLS test certificates', scope: 'test' },
  ...[
    ['/usr/bin/git', 'git'],
    ['/usr/bin/make', 'make'],
    ['/usr/bin/zip', 'zip'],
    ['/usr/bin/vim', 'vim'],
    ['/usr/bin/ssh', 'openssh-client'],
    ['/usr/bin/node', 'nodejs'],
    ['/usr/bin/npm', 'npm'],
  ].map(([path, pkg]) => ({
    path,
    pkg,
    purpose: 'the shell confinement tests (programs used as launchers)',
    scope: 'test',
  })),
  {
    path: '/usr/bin/asciinema',
    pkg: 'asciinema',
    purpose: 'playing exported terminal sessions back in the tests',
    scope: 'test',
  },
  {
    path: '/usr/sbin/sshd',
    pkg: 'openssh-server',
    purpose: 'the egress tests of ssh (git over ssh to a local sshd)',
    scope: 'test',
  },
  { path: '/usr/bin/ssh', pkg: 'openssh-client', purpose: 'the egress tests of ssh', scope: 'test' },
  {
    path: '/usr/lib/postgresql/*/bin/initdb',
    pkg: 'postgresql',
    purpose: 'the PostgreSQL store tests (a throwaway cluster each)',
    scope: 'test',
  },
  { path: '/usr/bin/rg', pkg: 'ripgrep', purpose: 'the sandbox-runtime peer of the bench', scope: 'bench' },
  { path: '/usr/bin/socat', pkg: 'socat', purpose: 'the sandbox-runtime peer of the bench', scope: 'bench' },
];

/** Each command needs what the ones before it need: bench ⊃ test ⊃ serve. */
const SCOPES = ['serve', 'test', 'bench'];

/** The dependencies a command (`serve`, `test` or `bench`) needs on this machine. */
export function neededFor(scope, isRoot = process.getuid?.() === 0) {
  const upTo = SCOPES.indexOf(scope);
  if (upTo < 0) throw new Error(`unknown scope "${scope}"; use one of ${SCOPES.join(', ')}`);
  return SYSTEM_DEPS.filter((d) => SCOPES.indexOf(d.scope) <= upTo && (!d.rootOnly || isRoot));
}

/** Whether a dependency's file is here (a `*` segment matches any directory). */
export function isPresent(dep) {
  const star = dep.path.indexOf('/*/');
  if (star < 0) return existsSync(dep.path);
  const parent = dep.path.slice(0, star);
  const rest = dep.path.slice(star + 3);
  if (!existsSync(parent)) return false;
  return readdirSync(parent).some((d) => existsSync(join(parent, d, rest)));
}

/** The dependencies of a command that are missing here. */
export function missingFor(scope, isRoot = process.getuid?.() === 0) {
  return neededFor(scope, isRoot).filter((d) => !isPresent(d));
}

/** The exact command that installs packages here: plain as root, through sudo when it exists. */
export function installCommand(pkgs, isRoot = process.getuid?.() === 0) {
  const install = `apt-get install -y --no-install-recommends ${[...new Set(pkgs)].join(' ')}`;
  if (isRoot) return `apt-get update && ${install}`;
  if (existsSync('/usr/bin/sudo')) return `sudo apt-get update && sudo ${install}`;
  return `su -c 'apt-get update && ${install}'`;
}
