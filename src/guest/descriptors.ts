/**
 * Descriptors the agent inherited. Everything Node and libuv open is close-on-exec, but a
 * descriptor the agent was started with and that is not (a pipe of the launcher, say) would
 * pass into every job and terminal. At start the agent closes each descriptor above 2 that
 * lacks O_CLOEXEC; its link to the host is 0 and 1 (2 carries diagnostics).
 */
import { closeSync, readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

/** Closes inherited descriptors above 2 without close-on-exec; returns how many were closed. */
export function closeInheritedDescriptors(): number {
  let closed = 0;
  let fds: string[];
  try {
    fds = readdirSync('/proc/self/fd');
  } catch {
    return 0;
  }
  for (const name of fds) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    let flags: number;
    try {
      const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
      flags = Number.parseInt(/^flags:\s+([0-7]+)/m.exec(info)?.[1] ?? '', 8);
    } catch {
      continue; // closed meanwhile, or the directory's own descriptor
    }
    if (Number.isNaN(flags) || flags & O_CLOEXEC) continue;
    try {
      closeSync(fd);
      closed++;
    } catch {
      // Already closed.
    }
  }
  return closed;
}
