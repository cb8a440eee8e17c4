/**
 * The launch's own mount namespace (Paddock as root): before dropping to the sandbox uid, the
 * launching shell unshares a private mount namespace and mounts, on the launch's own directory
 * under the server's anchor (0700, owned by the sandbox uid), what the sandbox binds: the
 * computer's disk image (loop, ext4), its staged files, a plain workspace. Only root and the
 * sandbox uid can pass that directory, and only inside this namespace is anything mounted
 * there: the host's mount table never changes, and every mount (and the disk's loop device,
 * which clears itself) goes with the sandbox's last process — also when the server is killed.
 */

/** Gives the launch a mount namespace of its own. */
const UNSHARE = '/usr/bin/unshare';

/** One mount on a directory of the launch: a bind of a host directory, or a disk image. */
export type AnchorMount =
  | { kind: 'bind'; source: string; target: string }
  /** `freshTmp`: empty the disk's `tmp/` first (a kept disk keeps /workspace, never /tmp). */
  | { kind: 'disk'; image: string; target: string; freshTmp: boolean }
  /**
   * The computer's root: an overlay of `lowerDirs` (top first, read-only) under `root/upper` of
   * the disk mounted before it (`root/work` beside it), made on first use and owned by `rootId`
   * (the image's root on the host). `seed`: a host directory (a restored checkpoint's root
   * layer) copied to be `root/upper` before the overlay is mounted; the disk must be fresh.
   */
  | { kind: 'overlay'; lowerDirs: string[]; target: string; rootId: number; seed?: string };

/** Exit codes of the launch shell when a step fails (the reason is on its stderr, the diagnostics). */
export const LAUNCH_EXIT = { bind: 122, disk: 123, overlay: 124 } as const;

const fail = (code: number, why: string) => `{ echo "paddock: ${why}" >&2; exit ${code}; }`;

// $1 the sandbox uid, then triples (kind, source, target) up to "--", then the command; an
// overlay has a fourth argument, its seed (empty: none).
// mount -n: the namespace is private, so nothing goes to the host's /run/mount/utab.
// An overlay's upper and work directories are on the disk mounted last before it ($disk), where
// nothing binds them into the computer except through the overlay. A seed is copied into a
// disk that has no root layer yet, before anything is mounted over it: cp -a keeps owners,
// modes, times, hard links, whiteouts (devices 0/0) and, as root, the trusted.overlay.opaque
// attributes (--preserve=xattr makes a lost attribute an error), and follows no symlink.
// redirect_dir and metacopy stay off whatever the module's defaults: every change to the image
// is then a whole file or directory in the upper layer, which a checkpoint can keep.
const SCRIPT = [
  'id=$1; shift; disk=',
  'while [ "$1" != "--" ]; do',
  '  case $1 in',
  `    bind) mount -n --bind "$2" "$3" || ${fail(LAUNCH_EXIT.bind, "could not bind the computer's staged files")} ;;`,
  `    disk|disk-fresh-tmp) mount -n -t ext4 -o loop,nosuid,nodev,noatime,noinit_itable "$2" "$3" || ${fail(LAUNCH_EXIT.disk, "could not mount the computer's disk (no free loop device, or a damaged kept disk: check it with e2fsck -f)")}`,
  `      if [ "$1" = disk-fresh-tmp ]; then rm -rf "$3/tmp" && mkdir -m 1777 "$3/tmp" && chown "$id:$id" "$3/tmp" || ${fail(LAUNCH_EXIT.disk, "could not empty the computer's /tmp")}; fi; disk=$3 ;;`,
  `    overlay:*) rid=\${1#overlay:}; seed=$4; [ -n "$disk" ] || ${fail(LAUNCH_EXIT.overlay, 'an image needs the computer disk')}`,
  `      if [ -n "$seed" ] && [ -e "$disk/root" ]; then ${fail(LAUNCH_EXIT.overlay, 'a restored root layer needs a fresh disk')}; fi`,
  `      if [ ! -d "$disk/root" ]; then rm -rf "$disk/root.new"; mkdir -m 0700 "$disk/root.new" && mkdir -m 0700 "$disk/root.new/work" && if [ -n "$seed" ]; then cp -a --preserve=xattr --no-dereference -- "$seed" "$disk/root.new/upper"; else mkdir -m 0755 "$disk/root.new/upper" && chown "$rid:$rid" "$disk/root.new/upper"; fi && mv "$disk/root.new" "$disk/root" || ${fail(LAUNCH_EXIT.overlay, "could not make the computer's root layer on its disk (a restored one may not fit its disk)")}; fi`,
  `      mount -n -t overlay -o "lowerdir=$2,upperdir=$disk/root/upper,workdir=$disk/root/work,redirect_dir=off,metacopy=off,nosuid,nodev" overlay "$3" || ${fail(LAUNCH_EXIT.overlay, "could not mount the computer's root (overlayfs over its image)")}`,
  '      shift ;;',
  `    *) exit ${LAUNCH_EXIT.bind} ;;`,
  '  esac',
  '  shift 3',
  'done',
  'shift',
  'exec "$@"',
].join('\n');

/** overlayfs's lowerdir option: absolute paths without the separators of its option string. */
function overlayLower(dirs: string[]): string {
  for (const d of dirs)
    if (!d.startsWith('/') || /[,:\\\n]/.test(d))
      throw new Error(`image layer ${d} cannot be an overlay layer (its path holds "," ":" or "\\")`);
  const value = dirs.join(':');
  if (dirs.length === 0 || value.length > 3500)
    throw new Error(`an image of ${dirs.length} layers does not fit one overlay mount`);
  return value;
}

/**
 * The launch prefix that mounts `mounts` in a new mount namespace and then runs the rest of the
 * command line (the drop to the sandbox uid, then bwrap). Every target must be a directory
 * under `launchDir`; `ownerId` is the sandbox uid.
 */
export function launchNamespacePrefix(launchDir: string, ownerId: number, mounts: AnchorMount[]): string[] {
  for (const m of mounts) {
    const rest = m.target.slice(launchDir.length);
    if (!m.target.startsWith(`${launchDir}/`) || !/^\/[a-z0-9][a-z0-9-]*$/.test(rest))
      throw new Error(`mount target ${m.target} is not a directory of ${launchDir}`);
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
    String(ownerId),
    ...mounts.flatMap((m) =>
      m.kind === 'bind'
        ? ['bind', m.source, m.target]
        : m.kind === 'disk'
          ? [m.freshTmp ? 'disk-fresh-tmp' : 'disk', m.image, m.target]
          : [`overlay:${m.rootId}`, overlayLower(m.lowerDirs), m.target, m.seed ?? ''],
    ),
    '--',
  ];
}
