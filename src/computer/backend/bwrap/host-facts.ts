/**
 * Facts of the host the bwrap command line is built from: the merged-/usr layout, the /etc
 * entries on the allow-list, whether a program can run.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { ETC_ALLOWLIST, type RootEntry } from './args.js';

/** /bin, /sbin, /lib… of the host: symlinks (merged /usr), directories, or absent. */
export function rootEntries(): Record<string, RootEntry> {
  const out: Record<string, RootEntry> = {};
  for (const path of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    try {
      const s = lstatSync(path);
      out[path] = s.isSymbolicLink() ? { kind: 'symlink', target: readlinkSync(path) } : { kind: 'dir' };
    } catch {
      out[path] = { kind: 'absent' };
    }
  }
  return out;
}

/** The host's /etc entries on the allow-list (python3.X included). */
export function etcEntries(): string[] {
  let names: string[] = [];
  try {
    names = readdirSync('/etc');
  } catch {
    return [];
  }
  // python3.N and the JDK's configuration (java.security, jvm.cfg: no secrets) are versioned names
  return names
    .filter((n) => ETC_ALLOWLIST.includes(n) || /^python3\.\d+$/.test(n) || /^java-\d+-openjdk$/.test(n))
    .sort();
}

/** Whether the server may execute `path`. */
export function canExecute(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The dynamic loader and shared libraries a program and the native addons it loads need on this
 * host (from `ldd`), so the guest agent can run on an image that lacks them (an Alpine image has
 * no glibc) and never loads a library of the image, which root inside could have replaced: the
 * loader is started directly with these libraries as its search path. Null when the program is
 * static, or `ldd` cannot tell.
 */
export function loaderOf(
  program: string,
  addons: string[] = [],
): { loader: string; libraries: string[] } | null {
  let text = '';
  try {
    for (const file of [program, ...addons])
      text += execFileSync('ldd', [file], {
        encoding: 'utf8',
        timeout: 10_000,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
  } catch {
    return null;
  }
  const libraries: string[] = [];
  let loader: string | null = null;
  for (const line of text.split('\n')) {
    const linked = /=>\s+(\/\S+)\s+\(/.exec(line);
    if (linked?.[1]) {
      if (!libraries.includes(linked[1])) libraries.push(linked[1]);
    } else {
      const direct = /^\s*(\/\S+)\s+\(/.exec(line);
      if (direct?.[1]) loader = direct[1];
    }
  }
  if (!loader || !libraries.every((l) => canExecute(l) || readable(l))) return null;
  return { loader, libraries };
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}
