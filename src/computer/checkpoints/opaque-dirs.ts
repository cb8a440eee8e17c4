/**
 * Which directories of an overlay's upper layer are opaque (`trusted.overlay.opaque=y`: they
 * hide the image's entries beneath them). Node has no call for extended attributes, so the walk
 * hands batches of directories to one `getfattr` each, by descriptor: every directory is opened
 * here the way the snapshot opens it (`O_DIRECTORY|O_NOFOLLOW` under its already-open parent),
 * and getfattr is given `/proc/<pid>/fd/<n>`, which the kernel resolves to that very inode —
 * never a path through the tree that a job could redirect with a symlink. A directory with many
 * subdirectories keeps only itself open until they are all opened, so the descriptors held stay
 * near the batch size whatever the shape of the tree. Synchronous, in the checkpoint worker.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, fstatSync, openSync, readdirSync } from 'node:fs';
import { PaddockError } from '../../shared/errors.js';
import { childPath, isGone } from './at.js';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

/** Directories asked about in one getfattr run. */
const BATCH = 256;
const ATTR = 'trusted.overlay.opaque';
const GETFATTR = '/usr/bin/getfattr';

/** An open directory, closed when neither a batch nor an unopened child needs it. */
interface Held {
  fd: number;
  ino: bigint;
  refs: number;
}

/** The inode numbers of the opaque directories under the open directory `root` (left open). */
export function opaqueDirs(root: number): Set<bigint> {
  const opaque = new Set<bigint>();
  const rootSt = fstatSync(root, { bigint: true });
  const dev = rootSt.dev;
  const release = (h: Held): void => {
    if (--h.refs === 0) closeSync(h.fd);
  };
  // the root is opened again through its descriptor, so every directory here is closed the same way
  const first: Held = {
    fd: openSync(`/proc/self/fd/${root}`, O_RDONLY | O_DIRECTORY),
    ino: rootSt.ino,
    refs: 1,
  };
  const pending: { parent: Held; name: string }[] = [];
  let batch: Held[] = [];
  const flush = (): void => {
    for (const h of queryOpaque(batch)) opaque.add(h.ino);
    for (const h of batch) release(h);
    batch = [];
  };
  const visit = (dir: Held): void => {
    // d_type from the directory itself: no stat of each file, and only directories are opened
    for (const e of readdirSync(`/proc/self/fd/${dir.fd}`, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      dir.refs++;
      pending.push({ parent: dir, name: e.name });
    }
    batch.push(dir);
    if (batch.length >= BATCH) flush();
  };
  visit(first);
  while (pending.length > 0) {
    const { parent, name } = pending.pop() as { parent: Held; name: string };
    let fd: number | null = null;
    try {
      fd = openSync(childPath(parent.fd, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    } catch (e) {
      if (!isGone(e)) throw e;
    }
    release(parent);
    if (fd === null) continue;
    const st = fstatSync(fd, { bigint: true });
    // a mount inside the tree is not part of it (the snapshot skips it too)
    if (st.dev !== dev) {
      closeSync(fd);
      continue;
    }
    visit({ fd, ino: st.ino, refs: 1 });
  }
  if (batch.length > 0) flush();
  return opaque;
}

/** Those of `dirs` whose opaque attribute is `y`, by one getfattr over their descriptors. */
function queryOpaque(dirs: Held[]): Held[] {
  const byPath = new Map(dirs.map((h) => [`/proc/${process.pid}/fd/${h.fd}`, h]));
  // no -h: the magic link is followed to the open directory itself (lgetxattr would read the link)
  const r = spawnSync(GETFATTR, ['--absolute-names', '-n', ATTR, '--', ...byPath.keys()], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) {
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      `Could not read the root layer's opaque directories (${r.error.message}); install the "attr" package (getfattr) and take the checkpoint again.`,
    );
  }
  // a directory without the attribute is reported on stderr and exits 1; anything else is a failure
  const problems = r.stderr.split('\n').filter((l) => l.trim() && !l.endsWith(`${ATTR}: No such attribute`));
  if ((r.status !== 0 && r.status !== 1) || problems.length > 0) {
    throw new PaddockError(
      'INTERNAL',
      `getfattr could not read the root layer's opaque directories (exit ${r.status}): ${problems.join('; ').slice(0, 500)}`,
    );
  }
  const found: Held[] = [];
  let current: Held | undefined;
  for (const line of r.stdout.split('\n')) {
    if (line.startsWith('# file: ')) current = byPath.get(line.slice('# file: '.length));
    else if (current && line === `${ATTR}="y"`) found.push(current);
  }
  return found;
}
