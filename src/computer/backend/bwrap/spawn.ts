/**
 * Starting bwrap: the launching shell joins the computer's cgroups while it still may (as the
 * server's own user), builds the launch's private mount namespace when there is one (as root,
 * see launch-namespace.ts), drops to the sandbox uid right before bwrap, and execs bwrap, which
 * reads its options from fd 3 and its generated files from the pipes after it. Every step execs
 * the next, so bwrap keeps the pid the server spawned and nothing of the computer ever runs
 * outside its cgroups or as root.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { IdMap } from './id-map.js';

/** The first file descriptor of the generated files handed to bwrap (0–2 stdio, 3 its options). */
export const FIRST_DATA_FD = 4;
/** Drops the launching shell to the sandbox uid (util-linux, present wherever bwrap is). */
const SETPRIV = '/usr/bin/setpriv';
/** PATH of the launching shell when the server has none. */
export const HOST_PATH = ['/usr/local/bin', '/usr/bin', '/bin'];

/** How one bwrap is started. */
export interface BwrapSpawn {
  bwrapPath: string;
  /** The full bwrap argv (options, then `--` and the command). */
  argv: string[];
  /** cgroup.procs files the launching shell joins first. */
  procsFiles: string[];
  /** Contents of fds 4, 5, … in order. */
  dataFiles: Buffer[];
  /** Pipes after the data files that bwrap uses itself (info and block fds). */
  extraPipes: number;
  /** Runs before the drop, as the server's user (the launch namespace's prefix). */
  prefix: string[];
  /** The sandbox accounts when Paddock runs as root (bwrap then runs as the agent's uid). */
  runAs: IdMap | null;
}

/** Spawns bwrap as described; the child's pid is bwrap's. */
export function spawnBwrap(s: BwrapSpawn): ChildProcess {
  // Options travel through fd 3 (kept out of the guest's /proc/1/cmdline); bwrap reads the
  // command itself only from its real argv.
  const split = s.argv.indexOf('--');
  const options = s.argv.slice(0, split);
  const command = s.argv.slice(split);
  const enter =
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';
  const drop = s.runAs
    ? [
        SETPRIV,
        `--reuid=${s.runAs.agentHostId}`,
        `--regid=${s.runAs.agentHostId}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--',
      ]
    : [];
  const child = spawn(
    '/bin/sh',
    [
      '-c',
      enter,
      'paddock-launch',
      String(s.procsFiles.length),
      ...s.procsFiles,
      ...s.prefix,
      ...drop,
      s.bwrapPath,
      '--args',
      '3',
      ...command,
    ],
    {
      stdio: [
        'pipe',
        'pipe',
        'pipe',
        'pipe',
        ...s.dataFiles.map(() => 'pipe' as const),
        ...Array.from({ length: s.extraPipes }, () => 'pipe' as const),
      ],
      env: { PATH: process.env.PATH ?? HOST_PATH.join(':') },
    },
  );
  const feed = (fd: number, content: Buffer | string) => {
    const pipe = child.stdio[fd] as NodeJS.WritableStream;
    pipe.on('error', () => undefined);
    pipe.end(Buffer.isBuffer(content) ? content : Buffer.from(content));
  };
  feed(3, `${options.join('\0')}\0`);
  s.dataFiles.forEach((content, i) => {
    feed(FIRST_DATA_FD + i, content);
  });
  return child;
}
