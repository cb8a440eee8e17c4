/**
 * The launch's own mount namespace (Paddock as root): before dropping to the sandbox uid, the
 * launching shell unshares a private mount namespace, mounts a small tmpfs on the server's
 * anchor directory (0700, owned by the sandbox uid) and mounts there what the sandbox binds:
 * the computer's disk image (loop, ext4), its staged files, a plain workspace. Only root and
 * the sandbox uid can pass the anchor, and only inside this namespace is anything there: the
 * host's mount table never changes, and every mount (and the disk's loop device, which clears
 * itself) goes with the sandbox's last process — also when the server is killed.
 */

/** Gives the launch a mount namespace of its own. */
const UNSHARE = '/usr/bin/unshare';

/** One mount under the anchor: a bind of a host directory, or a disk image. */
export type AnchorMount =
  | { kind: 'bind'; source: string; name: string }
  /** `freshTmp`: empty the disk's `tmp/` first (a kept disk keeps /workspace, never /tmp). */
  | { kind: 'disk'; image: string; name: string; freshTmp: boolean };

/** Exit codes of the launch shell when a step fails (the reason is on its stderr, the diagnostics). */
export const LAUNCH_EXIT = { anchor: 121, bind: 122, disk: 123 } as const;

const fail = (code: number, why: string) => `{ echo "paddock: ${why}" >&2; exit ${code}; }`;

// $1 anchor, $2 the sandbox uid, then triples (kind, source, name) up to "--", then the command.
// mount -n: the namespace is private, so nothing goes to the host's /run/mount/utab.
const SCRIPT = [
  'a=$1; id=$2; shift 2',
  `mount -n -t tmpfs -o mode=0700,uid=$id,gid=$id,size=256k,nr_inodes=64,nosuid,nodev,noexec paddock-anchor "$a" || ${fail(LAUNCH_EXIT.anchor, 'could not mount the launch directory')}`,
  'while [ "$1" != "--" ]; do',
  '  t="$a/$3"',
  '  case $1 in',
  `    bind) mkdir "$t" && mount -n --bind "$2" "$t" || ${fail(LAUNCH_EXIT.bind, "could not bind the computer's staged files")} ;;`,
  `    disk|disk-fresh-tmp) mkdir "$t" && mount -n -t ext4 -o loop,nosuid,nodev,noatime,noinit_itable "$2" "$t" || ${fail(LAUNCH_EXIT.disk, "could not mount the computer's disk (no free loop device, or a damaged kept disk: check it with e2fsck -f)")}`,
  `      if [ "$1" = disk-fresh-tmp ]; then rm -rf "$t/tmp" && mkdir -m 1777 "$t/tmp" && chown "$id:$id" "$t/tmp" || ${fail(LAUNCH_EXIT.disk, "could not empty the computer's /tmp")}; fi ;;`,
  `    *) exit ${LAUNCH_EXIT.bind} ;;`,
  '  esac',
  '  shift 3',
  'done',
  'shift',
  'exec "$@"',
].join('\n');

/**
 * The launch prefix that builds the anchor in a new mount namespace and then runs the rest of
 * the command line (the drop to the sandbox uid, then bwrap). `ownerId` is the sandbox uid.
 */
export function launchNamespacePrefix(anchor: string, ownerId: number, mounts: AnchorMount[]): string[] {
  const triples = mounts.flatMap((m) =>
    m.kind === 'bind'
      ? ['bind', m.source, m.name]
      : [m.freshTmp ? 'disk-fresh-tmp' : 'disk', m.image, m.name],
  );
  for (const m of mounts) {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(m.name)) throw new Error(`bad anchor name ${m.name}`);
  }
  return [
    UNSHARE,
    '--mount',
    '--propagation',
    'private',
    '--',
    '/bin/sh',
    '-c',
    SCRIPT,
    'paddock-launch-ns',
    anchor,
    String(ownerId),
    ...triples,
    '--',
  ];
}
