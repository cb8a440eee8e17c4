/**
 * The bwrap command line of a computer: deny-by-default mounts, every namespace unshared, no
 * capabilities. Pure (host facts are passed in) so the layout can be read and tested as data.
 */

import { basename } from 'node:path';
import { IMAGE_AGENT_ID } from '../../images/ids.js';
import {
  GUEST_AGENT_DIR,
  GUEST_CLIENT_DIRS,
  GUEST_NODE,
  GUEST_OPT,
  GUEST_PATH,
  GUEST_SCOPE_PROGRAM,
  GUEST_SPAWNER_PROGRAM,
  GUEST_UID,
  GUEST_USER,
  GUEST_WORKSPACE,
} from '../../link/guest-layout.js';
import { SHELL_INIT, shellInitText } from '../../shell-startup.js';
import type { SandboxSpec } from '../types.js';
import { AGENT_CAPABILITIES } from './id-map.js';

/** Host /etc entries a userland needs and that hold no secrets (missing ones are skipped). */
export const ETC_ALLOWLIST = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'debian_version',
  'fonts',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'locale.alias',
  'localtime',
  'magic',
  'magic.mime',
  'mime.types',
  'os-release',
  'perl',
  'profile.d',
  'protocols',
  'python3',
  'services',
  'ssl',
  'terminfo',
  'timezone',
  'vim',
  'xml',
];

/** Top-level system paths besides /usr: each is a symlink (merged /usr), a directory, or absent. */
export type RootEntry = { kind: 'symlink'; target: string } | { kind: 'dir' } | { kind: 'absent' };

/** Host facts and generated files the command line refers to. */
export interface BwrapLayout {
  /** Host node binary. */
  nodePath: string;
  /** Host directory of the compiled guest agent. */
  guestDir: string;
  /** Host directory of the in-computer clients (clients/ of the package), if present. */
  clientsDir: string | null;
  /** Packages the agent loads on demand (node-pty), bound read-only at /opt/paddock/node_modules/<name>. */
  guestPackages?: { name: string; dir: string }[];
  /** Host directory that becomes /workspace. */
  workspace: string;
  /** Host directory that becomes /tmp (the computer's disk); absent or null: a tmpfs of `diskMb`. */
  tmpDir?: string | null;
  /** Generated files: the file descriptor bwrap reads each one from, by guest path (e.g. /etc/passwd). */
  generated: Record<string, number>;
  /** Generated programs (mode 0755), the same way (e.g. the jobs' Landlock launcher). */
  programs?: Record<string, number>;
  /** /bin, /sbin, /lib, /lib32, /lib64, /libx32 on the host. */
  rootEntries: Record<string, RootEntry>;
  /** Extra /etc names present on the host that match the allow-list (e.g. python3.11). */
  etcEntries: string[];
  /**
   * The agent and the jobs as two accounts (see id-map.ts): bwrap reports on `infoFd` and waits
   * on `blockFd` until the host has written the id maps. Absent: one account for everything.
   */
  accounts?: { infoFd: number; blockFd: number } | null;
  /** Options for the agent's node (e.g. `--disable-sigusr1` where this Node has it). */
  nodeFlags?: string[];
  /**
   * The computer runs on an image: `root` is its overlay (mounted by the launch namespace), bound
   * as `/` instead of the host's system directories; the agent is then uid IMAGE_AGENT_ID inside
   * and jobs run as `user` (needs `accounts`).
   */
  image?: { root: string; user: 'guest' | 'root' } | null;
  /**
   * On an image, the host's dynamic loader and the libraries of `nodePath`: bound under
   * /opt/paddock/lib, and the agent is started through the loader with them as its only library
   * path, so it runs whatever C library the image has (or none). Null: the image's own.
   */
  agentLoader?: { loader: string; libraries: string[] } | null;
}

/** Where the agent's own loader and libraries appear on an image. */
export const GUEST_AGENT_LIB = `${GUEST_OPT}/lib`;

/** Generated /etc files a computer on an image takes from its image instead. */
export const IMAGE_OWN_ETC = ['/etc/passwd', '/etc/group', '/etc/nsswitch.conf', '/etc/shells'];

/** The full argv after `bwrap` (pass it with `--args` so it never shows in the guest's /proc). */
export function buildBwrapArgs(spec: SandboxSpec, layout: BwrapLayout): string[] {
  const accounts = layout.accounts ?? null;
  const image = accounts ? (layout.image ?? null) : null;
  const agentId = String(image ? IMAGE_AGENT_ID : 0);
  // Two accounts: the agent is uid 0 of the namespace (on an image, uid IMAGE_AGENT_ID, outside
  // the image's ids) with a few of its capabilities; jobs drop to the guest account or root. Nested user namespaces are then refused by the seccomp filter, since
  // bwrap's --disable-userns cannot be combined with a map the host writes.
  const identity = accounts
    ? [
        '--uid',
        agentId,
        '--gid',
        agentId,
        ...AGENT_CAPABILITIES.flatMap((c) => ['--cap-add', c]),
        '--info-fd',
        String(accounts.infoFd),
        '--userns-block-fd',
        String(accounts.blockFd),
      ]
    : ['--disable-userns', '--uid', String(GUEST_UID), '--gid', String(GUEST_UID)];
  const a: string[] = [
    '--unshare-all',
    '--unshare-user',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    ...identity,
    '--hostname',
    `paddock-${sandboxName(spec)}`,
    '--clearenv',
  ];
  for (const [k, v] of Object.entries(spec.env)) a.push('--setenv', k, v);
  if (image) a.push('--bind', image.root, '/');
  else {
    a.push('--ro-bind', '/usr', '/usr');
    for (const [path, entry] of Object.entries(layout.rootEntries)) {
      if (entry.kind === 'symlink') a.push('--symlink', entry.target, path);
      else if (entry.kind === 'dir') a.push('--ro-bind', path, path);
    }
    a.push('--dir', '/etc');
    for (const name of layout.etcEntries) a.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`);
  }
  for (const [target, fd] of Object.entries(layout.generated))
    a.push('--perms', '0644', '--ro-bind-data', String(fd), target);
  a.push('--proc', '/proc', '--dev', '/dev');
  if (layout.tmpDir) a.push('--bind', layout.tmpDir, '/tmp');
  else a.push('--perms', '1777', '--size', String(spec.limits.diskMb * 1024 * 1024), '--tmpfs', '/tmp');
  if (!image) a.push('--dir', '/var', '--symlink', '../tmp', '/var/tmp');
  // Directories bwrap makes for mount points are 0700 and the agent's: the guest account needs them.
  for (const dir of [`${GUEST_OPT}/bin`, `${GUEST_OPT}/node_modules`, '/node_modules'])
    a.push('--perms', '0755', '--dir', dir);
  a.push('--bind', layout.workspace, GUEST_WORKSPACE);
  a.push('--ro-bind', layout.guestDir, GUEST_AGENT_DIR);
  a.push('--ro-bind', layout.nodePath, GUEST_NODE);
  for (const [target, fd] of Object.entries(layout.programs ?? {}))
    a.push('--perms', '0755', '--ro-bind-data', String(fd), target);
  for (const p of layout.guestPackages ?? [])
    a.push('--ro-bind', p.dir, `${GUEST_OPT}/node_modules/${p.name}`);
  if (layout.clientsDir) {
    // paddock-tool on PATH, paddock_tool on PYTHONPATH, and `paddock-tool` resolvable by Node
    // from any directory (require and import both look in /node_modules last)
    a.push('--ro-bind', `${layout.clientsDir}/cli`, GUEST_CLIENT_DIRS.cli);
    a.push('--ro-bind', `${layout.clientsDir}/node`, GUEST_CLIENT_DIRS.node);
    a.push('--ro-bind', `${layout.clientsDir}/python`, GUEST_CLIENT_DIRS.python);
    a.push('--ro-bind', `${layout.clientsDir}/node`, '/node_modules/paddock-tool');
  }
  for (const m of spec.mounts) a.push(m.readOnly ? '--ro-bind' : '--bind', m.source, m.target);
  const loader = image ? (layout.agentLoader ?? null) : null;
  if (loader)
    for (const lib of [loader.loader, ...loader.libraries])
      a.push('--ro-bind', lib, `${GUEST_AGENT_LIB}/${basename(lib)}`);
  a.push('--chdir', GUEST_WORKSPACE);
  a.push('--');
  // --inhibit-cache: the image's /etc/ld.so.cache is never read
  if (loader)
    a.push(
      `${GUEST_AGENT_LIB}/${basename(loader.loader)}`,
      '--inhibit-cache',
      '--library-path',
      GUEST_AGENT_LIB,
    );
  a.push(GUEST_NODE, ...(layout.nodeFlags ?? []), `${GUEST_AGENT_DIR}/agent.js`);
  a.push('--probe', spec.probe.join(','));
  if (accounts) a.push('--jobs-uid', String(image?.user === 'root' ? 0 : GUEST_UID));
  if (image) a.push('--require-scope');
  if (layout.programs?.[GUEST_SCOPE_PROGRAM] !== undefined) a.push('--scope', GUEST_SCOPE_PROGRAM);
  if (layout.programs?.[GUEST_SPAWNER_PROGRAM] !== undefined) a.push('--spawner', GUEST_SPAWNER_PROGRAM);
  return a;
}

/** The name of a sandbox's host resources and hostname: its own, else `g<generation>`. */
export function sandboxName(spec: Pick<SandboxSpec, 'generation' | 'name'>): string {
  return spec.name ?? `g${spec.generation}`;
}

/**
 * /etc/passwd, /etc/group and friends for the guest (`name`: the sandbox's, default
 * `g<generation>`). With `resolver` (an address on lo where the guest agent answers DNS),
 * names are looked up there after /etc/hosts.
 */
export function generatedEtc(
  generation: number,
  shell: string,
  name = `g${generation}`,
  resolver: string | null = null,
  path = GUEST_PATH,
): Record<string, string> {
  const hostname = `paddock-${name}`;
  const dns: Record<string, string> = resolver
    ? {
        '/etc/resolv.conf': `# Written by Paddock: the computer's own resolver (see docs/computer.md)\nnameserver ${resolver}\noptions timeout:2 attempts:2\n`,
      }
    : {};
  return {
    ...dns,
    '/etc/passwd': [
      'root:x:0:0:root:/nonexistent:/usr/sbin/nologin',
      `${GUEST_USER}:x:${GUEST_UID}:${GUEST_UID}:Paddock agent:${GUEST_WORKSPACE}:${shell}`,
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      '',
    ].join('\n'),
    '/etc/group': ['root:x:0:', `${GUEST_USER}:x:${GUEST_UID}:`, 'nogroup:x:65534:', ''].join('\n'),
    '/etc/hosts': `127.0.0.1\tlocalhost ${hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n`,
    '/etc/hostname': `${hostname}\n`,
    '/etc/nsswitch.conf': `passwd: files\ngroup: files\nshadow: files\nhosts: files${resolver ? ' dns' : ''}\n`,
    '/etc/shells': '/bin/sh\n/bin/bash\n/usr/bin/bash\n',
    '/etc/profile': [
      '# Written by Paddock for the computer; PATH is fixed and read-only, and set last.',
      'if [ -d /etc/profile.d ]; then',
      '  for i in /etc/profile.d/*.sh; do if [ -r "$i" ]; then . "$i"; fi; done',
      '  unset i',
      'fi',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
      'if [ -n "${BASH_VERSION-}" ] && [ -n "${PS1-}" ] && [ -r /etc/bash.bashrc ]; then . /etc/bash.bashrc; fi',
      `PATH=${path}`,
      'export PATH',
      '',
    ].join('\n'),
    [SHELL_INIT]: shellInitText(path),
    [`${GUEST_OPT}/package.json`]: '{"type":"module","private":true}\n',
  };
}
