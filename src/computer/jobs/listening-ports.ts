/**
 * Which TCP ports a computer and its jobs listen on, read by the host from `/proc`: the
 * computer's network namespace has its own `/proc/<pid>/net/tcp{,6}` (seen through any process
 * inside it), and a process's descriptors name the socket inodes it holds. Nothing here asks the
 * guest, so a job cannot lie about its ports; where `/proc` cannot be read (another backend, a
 * process gone meanwhile) the answer is simply empty.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** TCP state LISTEN in /proc/net/tcp. */
const LISTEN = '0A';
/** How deep below the sandbox's outer process to look for one inside its network namespace. */
const SEARCH_DEPTH = 4;

/** One listening socket: its port and the inode that names it. */
export interface ListeningSocket {
  port: number;
  inode: number;
}

/** The listening TCP sockets of the network namespace `pid` lives in (IPv4 and IPv6). */
export function listeningSockets(pid: number): ListeningSocket[] {
  return parseTables(
    TABLES.map((table) => {
      try {
        return readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
      } catch {
        return '';
      }
    }),
  );
}

/** {@link listeningSockets}, read off the event loop. */
export async function listeningSocketsAsync(pid: number): Promise<ListeningSocket[]> {
  return parseTables(
    await Promise.all(TABLES.map((table) => readFile(`/proc/${pid}/net/${table}`, 'utf8').catch(() => ''))),
  );
}

const TABLES = ['tcp', 'tcp6'] as const;

/** The LISTEN rows of the texts of /proc/net/tcp and tcp6. */
function parseTables(texts: string[]): ListeningSocket[] {
  const found: ListeningSocket[] = [];
  for (const text of texts) {
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (fields.length < 10 || fields[3] !== LISTEN) continue;
      const port = Number.parseInt(fields[1]!.split(':')[1] ?? '', 16);
      const inode = Number(fields[9]);
      if (Number.isInteger(port) && port > 0 && inode > 0) found.push({ port, inode });
    }
  }
  return found;
}

/** Socket inodes held open by `pids`. */
export function socketInodes(pids: readonly number[]): Set<number> {
  const inodes = new Set<number>();
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(Number(m[1]));
      } catch {
        // closed meanwhile
      }
    }
  }
  return inodes;
}

/** Ports that `pids` (processes inside one computer) listen on, ascending, without repeats. */
export function portsOfProcesses(pids: readonly number[]): number[] {
  const first = pids[0];
  if (first === undefined) return [];
  const held = socketInodes(pids);
  return uniquePorts(listeningSockets(first).filter((s) => held.has(s.inode)));
}

function uniquePorts(sockets: ListeningSocket[]): number[] {
  return [...new Set(sockets.map((s) => s.port))].sort((a, b) => a - b);
}

/** A descendant of `root` (or root itself) in another network namespace than this process. */
function processInsideNetns(root: number): number | null {
  if (root <= 0) return null;
  let own: string;
  try {
    own = readlinkSync('/proc/self/ns/net');
  } catch {
    return null;
  }
  let level = [root];
  for (let depth = 0; depth <= SEARCH_DEPTH && level.length > 0; depth++) {
    const next: number[] = [];
    for (const pid of level) {
      try {
        if (readlinkSync(`/proc/${pid}/ns/net`) !== own) return pid;
      } catch {
        continue;
      }
      next.push(...childrenOf(pid));
    }
    level = next;
  }
  return null;
}

function childrenOf(pid: number): number[] {
  const children: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return children;
  }
  for (const tid of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) children.push(...text.split(/\s+/).map(Number));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/**
 * The listening sockets of one computer for its views (get_computer_status, the dock's job
 * rows): the kernel's TCP tables are read at most once per `maxAgeMs` and shared by every port
 * question of that moment. Reading `/proc/<pid>/net/tcp` walks the kernel's whole connection hash
 * (milliseconds on a large machine), so a status with ten services read it eleven times before.
 * Decisions that must see the present (did a job's server go away, which job serves a port) use
 * the uncached functions above instead.
 */
export class ListeningTable {
  private read: { at: number; sockets: ListeningSocket[] } | null = null;
  /** A read off the event loop is under way. */
  private refreshing = false;
  /** A process inside the computer's network namespace and that namespace, once found. */
  private inside: { pid: number; ns: string } | null = null;

  constructor(
    /** The sandbox's outer host pid, or null while it is not running. */
    private readonly sandboxPid: () => number | null,
    private readonly maxAgeMs = 250,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Every port something in the computer listens on, ascending. */
  ports(): number[] {
    return uniquePorts(this.sockets());
  }

  /** The ports `pids` (processes of the computer) listen on, ascending. */
  portsOf(pids: readonly number[]): number[] {
    if (pids.length === 0) return [];
    const held = socketInodes(pids);
    return uniquePorts(this.sockets().filter((s) => held.has(s.inode)));
  }

  /**
   * Within `maxAgeMs` of the last read, that read. Up to four times that, the same read while a
   * new one is made off the event loop (under a flood of status calls the reads never hold the
   * loop). Older, or never read: read now.
   */
  private sockets(): ListeningSocket[] {
    const at = this.now();
    const read = this.read;
    if (read && at - read.at < this.maxAgeMs) return read.sockets;
    if (read && at - read.at < 4 * this.maxAgeMs) {
      this.refresh();
      return read.sockets;
    }
    const pid = this.namespacePid();
    const sockets = pid === null ? [] : listeningSockets(pid);
    this.read = { at, sockets };
    return sockets;
  }

  private refresh(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    const at = this.now();
    const pid = this.namespacePid();
    void (pid === null ? Promise.resolve([]) : listeningSocketsAsync(pid))
      .then((sockets) => {
        // a synchronous read that landed meanwhile is newer
        if (!this.read || this.read.at <= at) this.read = { at, sockets };
      })
      .finally(() => {
        this.refreshing = false;
      });
  }

  /**
   * A process in the computer's network namespace. A remembered one counts only while it is
   * still in the same namespace (its pid may have gone to a host process meanwhile).
   */
  private namespacePid(): number | null {
    const known = this.inside;
    if (known !== null && netnsOf(known.pid) === known.ns) return known.pid;
    const root = this.sandboxPid();
    const pid = root === null ? null : processInsideNetns(root);
    const ns = pid === null ? null : netnsOf(pid);
    this.inside = pid !== null && ns !== null && ns !== netnsOf(process.pid) ? { pid, ns } : null;
    return this.inside?.pid ?? null;
  }
}

function netnsOf(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return null;
  }
}
