import { parseGuestPath } from './path-rules.js';
import type { PathResolver } from './types.js';

/** Symlinks followed at most while resolving one path (Linux's MAXSYMLINKS). */
export const MAX_SYMLINK_HOPS = 40;

/** Where a path really leads in the guest, or why that could not be established. */
export type ResolvedPath = { ok: true; path: string; exists: boolean } | { ok: false; reason: string };

function parentOf(dir: string): string {
  const cut = dir.lastIndexOf('/');
  return cut <= 0 ? '/' : dir.slice(0, cut);
}

function join(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

async function canonical(resolver: PathResolver, path: string): Promise<string | null | { bad: string }> {
  const real = await resolver.realpath(path);
  if (real === null) return null;
  const parsed = parseGuestPath(real);
  return parsed.ok
    ? parsed.path
    : { bad: `the path resolver returned an invalid path for ${JSON.stringify(path)}` };
}

/**
 * Finds where `path` (already lexically valid) leads in the guest's filesystem, through the
 * guest's own resolver, the way the kernel would when opening it with `O_CREAT`:
 *
 * - An existing target is its `realpath`.
 * - Otherwise the deepest existing ancestor is resolved, and the remaining components are
 *   walked one by one from there. A component that does not exist and is not a symlink ends
 *   the walk: the result is the resolved ancestor plus the remaining suffix (`exists: false`).
 * - A component that is a dangling symlink (realpath says missing, readlink gives a target)
 *   is replaced by its target, which is walked in turn (absolute targets restart at `/`,
 *   `..` steps to the parent of the resolved directory), because creating a file through
 *   such a link creates it at the target. At most {@link MAX_SYMLINK_HOPS} links are followed.
 *
 * Without `resolver.readlink` a missing component cannot be told apart from a dangling
 * link, so a missing target is reported as unresolvable (callers deny: fail closed).
 * A `..` below a missing directory is unresolvable too (the kernel would fail with ENOENT).
 */
export async function resolveGuestPath(resolver: PathResolver, path: string): Promise<ResolvedPath> {
  const direct = await canonical(resolver, path);
  if (typeof direct === 'string') return { ok: true, path: direct, exists: true };
  if (direct !== null) return { ok: false, reason: direct.bad };

  const segments = path === '/' ? [] : path.slice(1).split('/');
  let cur = '/';
  let rest: string[] = segments;
  for (let keep = segments.length - 1; keep > 0; keep--) {
    const ancestor = await canonical(resolver, `/${segments.slice(0, keep).join('/')}`);
    if (ancestor === null) continue;
    if (typeof ancestor !== 'string') return { ok: false, reason: ancestor.bad };
    cur = ancestor;
    rest = segments.slice(keep);
    break;
  }
  return walk(resolver, cur, rest);
}

/** Walks `components` from the canonical directory `start`; the first one is known to be missing. */
async function walk(resolver: PathResolver, start: string, components: string[]): Promise<ResolvedPath> {
  let cur = start;
  const todo = components.slice();
  let skipRealpath = true;
  let hops = 0;
  while (todo.length > 0) {
    const name = todo.shift()!;
    if (name === '' || name === '.') continue;
    if (name === '..') {
      cur = parentOf(cur);
      continue;
    }
    const next = join(cur, name);
    if (!skipRealpath) {
      const real = await canonical(resolver, next);
      if (typeof real === 'string') {
        cur = real;
        continue;
      }
      if (real !== null) return { ok: false, reason: real.bad };
    }
    skipRealpath = false;
    if (!resolver.readlink) {
      return {
        ok: false,
        reason: `${JSON.stringify(next)} does not exist and the path resolver cannot tell whether it is a dangling symlink`,
      };
    }
    const target = await resolver.readlink(next);
    if (target === null) {
      const suffix = [name, ...todo].filter((s) => s !== '' && s !== '.');
      if (suffix.includes('..')) {
        return {
          ok: false,
          reason: `the path steps out of ${JSON.stringify(next)} with "..", which does not exist`,
        };
      }
      return { ok: true, path: suffix.reduce(join, cur), exists: false };
    }
    hops++;
    if (hops > MAX_SYMLINK_HOPS) return { ok: false, reason: 'too many levels of symbolic links' };
    if (target.length === 0 || target.includes('\0')) {
      return { ok: false, reason: `the symlink ${JSON.stringify(next)} has an invalid target` };
    }
    if (target.startsWith('/')) cur = '/';
    todo.unshift(...target.split('/'));
  }
  return { ok: true, path: cur, exists: true };
}
