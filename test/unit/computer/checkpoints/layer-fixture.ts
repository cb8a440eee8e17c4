/**
 * Helpers of the root layer tests: whether they can run here, and a description of an overlayfs
 * upper layer as the kernel reports it (lstat, never following a link; devices by number; each
 * directory's opaque mark).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** Why root layer tests cannot run here (false when they can). */
export function skipReason(): string | false {
  if (process.getuid?.() !== 0) return 'root layers are written as root';
  if (!readFileSync('/proc/filesystems', 'utf8').includes('\toverlay')) return 'no overlayfs';
  for (const tool of ['/usr/bin/getfattr', '/usr/bin/setfattr', '/usr/bin/mknod', '/usr/bin/unshare'])
    try {
      lstatSync(tool);
    } catch {
      return `${tool} is missing`;
    }
  return false;
}

/** The opaque mark of `path` (empty when none), never through a symlink. */
export function opaqueOf(path: string): string {
  try {
    return execFileSync('getfattr', ['--only-values', '-h', '-n', 'trusted.overlay.opaque', path], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return '';
  }
}

/** Each path of an upper layer: type, mode, owner, mtime, content, link text, device, opaque. */
export function describeLayer(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const firstOfInode = new Map<bigint, string>();
  const visit = (rel: string): void => {
    const path = rel ? join(root, rel) : root;
    const st = lstatSync(path, { bigint: true });
    const head = `mode=${(st.mode & 0o7777n).toString(8)} uid=${st.uid} gid=${st.gid} t=${st.mtimeNs / 1000n}`;
    if (st.isSymbolicLink()) out[rel] = `link ${head} -> ${readlinkSync(path)}`;
    else if (st.isDirectory()) {
      out[rel] = `dir ${head} opaque=${opaqueOf(path)}`;
      for (const n of readdirSync(path).sort()) visit(rel ? `${rel}/${n}` : n);
    } else if (st.isCharacterDevice()) out[rel] = `chr ${head} rdev=${st.rdev}`;
    else if (st.isFile()) {
      const group = st.nlink > 1n ? (firstOfInode.get(st.ino) ?? rel) : '';
      if (st.nlink > 1n && !firstOfInode.has(st.ino)) firstOfInode.set(st.ino, rel);
      const sha = createHash('sha256').update(readFileSync(path)).digest('hex');
      out[rel] = `file ${head} sha=${sha}${group ? ` group=${group}` : ''}`;
    } else out[rel] = 'other';
  };
  visit('');
  return out;
}
