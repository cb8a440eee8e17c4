/**
 * Which process of the computer is behind a connection the agent accepted (or a name lookup it
 * received): the socket is found in the network namespace's table (`/proc/net/tcp`, `udp`) by
 * its two ends, and its owner by the descriptor that points at it. The owner's egress
 * credentials (the proxy variables every job and terminal gets) and its cgroup (`/job<n>`)
 * tell the host which job it is; the host checks both, the agent only reports them.
 *
 * The namespace's table is read only when it must be: the kernel builds /proc/net/tcp by walking
 * its whole connection hash, shared by every namespace (3.5 ms even in an empty namespace here).
 * When every process of the computer that holds a socket other than a Unix one (the spawner and
 * spare shells hold those) is in one job's cgroup, that job made the connection and the table is
 * not read. /proc/net/unix lists only this namespace's sockets (tens of microseconds).
 *
 * Reading another account's descriptors and environment needs CAP_SYS_PTRACE in the computer's
 * user namespace, which the agent keeps (see backend/id-map.ts).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { endianness } from 'node:os';

/** Who made a connection, as far as the agent can tell. */
export interface SocketOrigin {
  /** Guest pid of the process holding the socket. */
  pid: number;
  /** The user and password of its HTTP_PROXY (they name its job or terminal), if it has them. */
  credentials: { user: string; password: string } | null;
  /** The leaf of its cgroup path (`job7`), if it is in one below the computer's. */
  cgroup: string | null;
}

/** An IPv4 endpoint as /proc/net/{tcp,udp} prints it: `0100007F:0035`. */
export function procEndpoint(address: string, port: number): string {
  const octets = address.split('.').map(Number);
  const ordered = endianness() === 'LE' ? octets.reverse() : octets;
  const hex = ordered.map((o) => o.toString(16).padStart(2, '0')).join('');
  return `${hex}:${port.toString(16).padStart(4, '0')}`.toUpperCase();
}

/**
 * The inode of the IPv4 socket whose local end is `local` (and, for TCP, whose remote end is
 * `remote`), from the namespace's table; null when it is not there (already closed).
 */
export function socketInode(
  protocol: 'tcp' | 'udp',
  local: { address: string; port: number },
  remote?: { address: string; port: number },
): string | null {
  let table: string;
  try {
    table = readFileSync(`/proc/net/${protocol}`, 'latin1');
  } catch {
    return null;
  }
  const want = procEndpoint(local.address, local.port);
  const peer = remote ? procEndpoint(remote.address, remote.port) : null;
  for (const line of table.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== want || (peer !== null && fields[2] !== peer)) continue;
    const inode = fields[9];
    if (inode && inode !== '0') return inode;
  }
  return null;
}

/** The computer's processes other than the agent and pid 1, newest first. */
function otherProcesses(): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  // newest first: the process that just connected is usually among the last started
  return entries
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .filter((pid) => pid !== process.pid && pid !== 1)
    .sort((a, b) => b - a);
}

/**
 * The inodes of the namespace's Unix sockets. Unreadable, the set is empty and every socket
 * counts: a socket made after the read counts too, so a race only sends the caller to the table.
 */
export function unixSocketInodes(): Set<string> {
  let table: string;
  try {
    table = readFileSync('/proc/net/unix', 'latin1');
  } catch {
    return new Set();
  }
  const inodes = new Set<string>();
  for (const line of table.split('\n').slice(1)) {
    const inode = line.trim().split(/\s+/)[6];
    if (inode) inodes.add(inode);
  }
  return inodes;
}

/** Whether `pid` holds a descriptor of a socket that is not one of the `unix` ones. */
function holdsSocket(pid: number, unix: ReadonlySet<string>): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (link.startsWith('socket:[') && !unix.has(link.slice(8, -1))) return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}

/**
 * The job whose cgroup holds every process of the computer that has a socket other than a Unix
 * one (so it made the connection), or null when there are processes of several jobs, of none
 * (a terminal), or none.
 */
export function soleSocketJob(): SocketOrigin | null {
  const unix = unixSocketInodes();
  let leaf: string | null = null;
  let first = 0;
  for (const pid of otherProcesses()) {
    if (!holdsSocket(pid, unix)) continue;
    const cgroup = cgroupOf(pid);
    if (cgroup === null || (leaf !== null && cgroup !== leaf)) return null;
    leaf = cgroup;
    first ||= pid;
  }
  return leaf === null ? null : { pid: first, credentials: null, cgroup: leaf };
}

/** Who made the TCP connection whose program end is `peer` (the end the agent accepted is `local`). */
export function originOfConnection(
  peer: { address: string; port: number },
  local: { address: string; port: number },
): SocketOrigin | null {
  return soleSocketJob() ?? originOfInode(socketInode('tcp', peer, local));
}

/** The process (other than the agent and pid 1) holding a descriptor of socket `inode`. */
export function ownerOfInode(inode: string): number | null {
  const target = `socket:[${inode}]`;
  for (const pid of otherProcesses()) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return null;
}

/** The proxy credentials in a process's environment (`HTTP_PROXY=http://user:password@…`). */
export function credentialsOf(pid: number): { user: string; password: string } | null {
  let environ: string;
  try {
    environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return null;
  }
  for (const entry of environ.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq < 0) continue;
    const name = entry.slice(0, eq);
    if (name !== 'HTTP_PROXY' && name !== 'http_proxy') continue;
    try {
      const url = new URL(entry.slice(eq + 1));
      if (!url.username) continue;
      return { user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
    } catch {
      // not a URL: look further
    }
  }
  return null;
}

/** The leaf of a process's cgroup2 path, relative to the computer's (`job7`), or null at its root. */
export function cgroupOf(pid: number): string | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith('0::')) continue;
    const leaf = line.slice(3).split('/').filter(Boolean).pop();
    return leaf && /^[A-Za-z0-9_-]{1,64}$/.test(leaf) ? leaf : null;
  }
  return null;
}

/** Who holds socket `inode`; null when nobody does any more. */
export function originOfInode(inode: string | null): SocketOrigin | null {
  if (inode === null) return null;
  const pid = ownerOfInode(inode);
  if (pid === null) return null;
  return { pid, credentials: credentialsOf(pid), cgroup: cgroupOf(pid) };
}
