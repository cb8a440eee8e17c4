/**
 * The file operations of a browser computer. Its busybox shell agent cannot hold descriptors
 * between requests, so the scoped walk (guest/scoped-walk.ts) runs here over canonical paths:
 * each component is asked for with `kind` (a link's text is read, never followed), and the
 * operation then names the canonical path the walk judged. A read is released only when the
 * agent reports that it read that very path; a write is placed from inside its directory,
 * entered with `cd -P` and checked to be the judged one, so a link swapped onto the path between
 * the walk and the write is never followed.
 */
import { randomBytes } from 'node:crypto';
import { GuestFailure } from '../../../guest/failure.js';
import { WithAttachment } from '../../../guest/handlers.js';
import type { CallArgs, CallResult } from '../../../guest/protocol.js';
import { ScopedWalk, type WalkIO, type WalkStep } from '../../../guest/scoped-walk.js';
import { type AgentLine, bytesOf, field } from './agent-line.js';

/**
 * Bytes of one `put`: its base64 follows the request line and the agent takes it with one
 * `head -c`. 24 KiB (32 KiB of base64) stays well inside what the guest's tty buffers (64 KiB).
 */
const PUT_CHUNK_BYTES = 24 * 1024;
/** Bytes of one `read` reply. */
const PULL_BYTES = 48 * 1024;

function join(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

function notRegular(path: string, type: string): GuestFailure {
  return new GuestFailure(
    'INVALID_ARGUMENT',
    type === 'dir'
      ? `${path} is a directory; use list_files to see its entries.`
      : `${path} is not a regular file; file tools only handle regular files — use run_command for special files.`,
  );
}

/** File operations over the agent's line requests. */
export class BrowserFiles {
  private readonly io: WalkIO<string>;

  constructor(private readonly agent: AgentLine) {
    this.io = {
      root: () => '/',
      step: (dir, name) => this.kind(join(dir, name)),
      parent: (dir) => (dir.lastIndexOf('/') <= 0 ? '/' : dir.slice(0, dir.lastIndexOf('/'))),
      where: (path) => path,
      close: () => undefined,
    };
  }

  private async kind(path: string): Promise<WalkStep<string>> {
    const [type, text] = await this.agent.request('kind', [field(path)]);
    switch (type) {
      case 'link':
        return { type: 'link', target: bytesOf(text).toString('utf8') };
      case 'dir':
      case 'file':
      case 'other':
        return { type, handle: path };
      default:
        return { type: 'missing' };
    }
  }

  async read(a: CallArgs<'fs.read'>): Promise<WithAttachment<CallResult<'fs.read'>>> {
    const file = await new ScopedWalk(this.io, a.scope).reach(a.path);
    if (file.type !== 'file') throw notRegular(a.path, file.type);
    const parts: Buffer[] = [];
    let got = 0;
    let size = 0;
    for (;;) {
      const want = Math.min(PULL_BYTES, a.byteLimit - got);
      const [s, data, real] = await this.agent.request('read', [field(file.path), a.offset + got, want]);
      if (bytesOf(real).toString('utf8') !== file.path) {
        throw new GuestFailure(
          'INVALID_ARGUMENT',
          `${a.path} changed while it was being read; read it again.`,
        );
      }
      size = Number(s);
      const bytes = bytesOf(data);
      parts.push(bytes);
      got += bytes.length;
      if (bytes.length < want || got >= a.byteLimit) break;
    }
    const eof = a.offset + got >= size;
    return new WithAttachment({ bytesRead: got, size, eof, rule: file.rule }, Buffer.concat(parts));
  }

  async write(a: CallArgs<'fs.write'>, data: Buffer): Promise<CallResult<'fs.write'>> {
    const to = await new ScopedWalk(this.io, a.scope).destination(a.path);
    if (!a.overwrite && (to.namedLink || to.existing !== 'missing')) {
      throw new GuestFailure(
        'FILE_EXISTS',
        `${a.path} already exists; pass overwrite=true to replace it or choose another path.`,
      );
    }
    if (to.existing === 'dir' || to.existing === 'other') throw notRegular(a.path, to.existing);
    const r = await this.place(to.dir, to.name, data, a.overwrite);
    return { ...r, rule: to.rule };
  }

  /** Writes `data` as `dir/name` (a canonical directory) through the agent's staging file. */
  async place(dir: string, name: string, data: Buffer, overwrite: boolean) {
    const token = randomBytes(6).toString('hex');
    for (let at = 0; at === 0 || at < data.length; at += PUT_CHUNK_BYTES) {
      const chunk = data.subarray(at, at + PUT_CHUNK_BYTES).toString('base64');
      await this.agent.request('put', [token, chunk.length], chunk);
    }
    const [bytes, created] = await this.agent.request('commit', [
      token,
      field(dir),
      field(name),
      overwrite ? 'overwrite' : 'create',
    ]);
    return { bytesWritten: Number(bytes), created: created === 'true' };
  }

  async list(a: CallArgs<'fs.list'>): Promise<CallResult<'fs.list'>> {
    const dir = await new ScopedWalk(this.io, a.scope).reach(a.path);
    if (dir.type !== 'dir') {
      throw new GuestFailure(
        'INVALID_ARGUMENT',
        `${a.path} is not a directory; use read_file to read a file.`,
      );
    }
    const [rows] = await this.agent.request('list', [field(dir.path)]);
    const entries = bytesOf(rows)
      .toString('utf8')
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => {
        const [type, size, mtime, mode, ...name] = l.split(' ');
        return {
          name: name.join(' '),
          type: (['file', 'dir', 'symlink'].includes(type ?? '') ? type : 'other') as
            | 'file'
            | 'dir'
            | 'symlink'
            | 'other',
          size: Number(size) || 0,
          mtimeMs: (Number(mtime) || 0) * 1000,
          mode: Number.parseInt(mode ?? '0', 8) || 0,
        };
      })
      .sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
    return {
      path: a.path,
      rule: dir.rule,
      total: entries.length,
      entries: entries.slice(a.offset, a.offset + a.limit),
    };
  }

  async resolve(a: CallArgs<'fs.resolve'>): Promise<CallResult<'fs.resolve'>> {
    const dir = await new ScopedWalk(this.io, a.scope).reach(a.path);
    if (dir.type !== 'dir') {
      throw new GuestFailure('NOT_FOUND', `${a.path} is not a directory in the computer; pass a directory.`);
    }
    return { path: dir.path, rule: dir.rule };
  }
}
