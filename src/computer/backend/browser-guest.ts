/**
 * The guest protocol of a browser computer, spoken on the server. The VM in the page runs a busybox
 * shell agent (scripts/browser-image/agent.sh) that knows a few line requests; this class turns
 * the host's framed calls (src/guest/protocol.ts) into those requests and the answers back into
 * frames, so the computer, its jobs, files and terminal work as over any other backend. Job output
 * is pushed: the guest sends each read of a job's stdout and stderr pipes, the end of each, and the
 * job's exit as events on the agent's port, and they become data, end and exit frames here.
 * Terminals are the guest's second serial port (one at a time).
 */
import { randomBytes } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import { GuestFailure, toGuestError } from '../../guest/failure.js';
import {
  encodeFrame,
  type Frame,
  FrameDecoder,
  FrameKind,
  type FrameKindValue,
  PROTOCOL_VERSION,
} from '../../guest/frames.js';
import {
  type CallArgs,
  type GuestError,
  type GuestMessage,
  guestErrorCodeSchema,
} from '../../guest/protocol.js';
import type { Disposable } from '../../shared/disposable.js';
import { GUEST_WORKSPACE } from '../link/guest-layout.js';
import { SHELL_INIT, shellInitText } from '../shell-startup.js';
import { AgentError, AgentLine, type BrowserVmLink, bytesOf, field } from './browser-agent-line.js';
import { BrowserConnections } from './browser-connections.js';
import { BrowserJobs, shellQuote } from './browser-jobs.js';

/**
 * Bytes of one `put`: its base64 follows the request line and the agent takes it with one
 * `head -c`. 24 KiB (32 KiB of base64) stays well inside what the guest's tty buffers (64 KiB).
 */
const PUT_CHUNK_BYTES = 24 * 1024;
/** Bytes of one `read` reply. */
const PULL_BYTES = 48 * 1024;

/** The guest end of a browser computer's link: `toGuest` takes the host's frames, `fromGuest` gives ours. */
export class BrowserGuest {
  readonly fromGuest = new PassThrough();
  readonly toGuest: Writable;
  readonly diagnostics = new PassThrough();
  private readonly agent: AgentLine;
  private readonly jobs: BrowserJobs;
  private readonly connections: BrowserConnections;
  private readonly attachments = new Map<number, Buffer>();
  private terminal: number | null = null;
  private closed = false;
  private readonly subscription: Disposable;

  constructor(
    private readonly link: BrowserVmLink,
    private readonly probe: string[],
    /** The page restores the image's snapshot: its agent announced itself long ago, so wake it. */
    private readonly restored = false,
  ) {
    this.agent = new AgentLine(
      link,
      (reason) =>
        link.close(`the page broke the browser computer's protocol (${reason}); the computer ended`),
      // `c…` names a preview connection, anything else a job
      (event) =>
        /^c\d{1,10}$/.test(event.fields[0] ?? '')
          ? this.connections.onEvent(event)
          : this.jobs.onEvent(event),
    );
    const io = {
      agent: this.agent,
      send: (kind: FrameKindValue, stream: number, fd: number, payload: Buffer) =>
        this.send(kind, stream, fd, payload),
      message: (m: GuestMessage) => this.message(m),
      writeFile: (path: string, data: Buffer, overwrite: boolean) => this.writeFile(path, data, overwrite),
    };
    this.jobs = new BrowserJobs(io);
    this.connections = new BrowserConnections(io);
    this.subscription = link.onData((port, data) => {
      if (port === 1) this.agent.push(data);
      else if (this.terminal !== null) this.send(FrameKind.Data, this.terminal, 1, data);
    });
    const decoder = new FrameDecoder();
    this.toGuest = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        try {
          for (const f of decoder.push(chunk)) this.onFrame(f);
        } catch (e) {
          this.note(`bad frame from the host: ${(e as Error).message}`);
        }
        done();
      },
    });
    void this.start();
  }

  /** Fails what waits on the agent (the VM is gone); `reason` ends the diagnostics. */
  close(reason: string): void {
    if (this.closed) return;
    this.note(reason);
    this.closed = true;
    this.jobs.clear();
    this.connections.clear();
    this.subscription.dispose();
    this.agent.fail(new Error(reason));
    this.fromGuest.end();
    this.diagnostics.end();
  }

  private note(line: string): void {
    if (!this.closed) this.diagnostics.write(`${line}\n`);
  }

  private async start(): Promise<void> {
    try {
      if (this.restored) this.agent.wake();
      await this.agent.ready;
      await this.agent.request('mkdir', [field(GUEST_WORKSPACE)]);
      await this.writeFile(SHELL_INIT, Buffer.from(shellInitText()), true);
      const programs: Record<string, boolean> = {};
      for (const name of this.probe) {
        programs[name] = (await this.agent.request('which', [field(name)]))[0] !== '-';
      }
      this.message({
        t: 'hello',
        version: PROTOCOL_VERSION,
        pid: 1,
        uid: 0,
        nodeVersion: '',
        shell: '/bin/sh',
        programs,
      });
    } catch (e) {
      this.note(`the browser computer did not start: ${(e as Error).message}`);
    }
  }

  private send(
    kind: (typeof FrameKind)[keyof typeof FrameKind],
    stream: number,
    fd: number,
    payload: Buffer,
  ): void {
    if (!this.closed) this.fromGuest.write(encodeFrame(kind, stream, fd, payload));
  }

  private message(m: GuestMessage): void {
    this.send(FrameKind.Control, 0, 0, Buffer.from(JSON.stringify(m)));
  }

  private onFrame(f: Frame): void {
    if (f.kind === FrameKind.Attachment) {
      this.attachments.set(f.stream, f.payload);
      return;
    }
    if (f.kind !== FrameKind.Control) {
      this.connections.onHostFrame(f.kind, f.stream, f.payload); // a preview connection's bytes
      return;
    }
    let call: { id: number; op: string; args: never };
    try {
      call = JSON.parse(f.payload.toString('utf8'));
    } catch {
      this.note('a call from the host is not JSON');
      return;
    }
    const attachment = this.attachments.get(call.id);
    this.attachments.delete(call.id);
    this.handle(call.op, call.args, attachment).then(
      (r) => {
        if (r.attachment) this.send(FrameKind.Attachment, call.id, 0, r.attachment);
        this.message({ t: 'reply', id: call.id, ok: true, value: r.value });
      },
      (e: unknown) => this.message({ t: 'reply', id: call.id, ok: false, error: guestError(e) }),
    );
  }

  private async handle(
    op: string,
    args: never,
    attachment: Buffer | undefined,
  ): Promise<{ value: unknown; attachment?: Buffer }> {
    switch (op) {
      case 'ping':
        await this.agent.request('ping', []);
        return { value: {} };
      case 'exec':
        return { value: await this.jobs.exec(args) };
      case 'release':
        return { value: {} };
      case 'signal': {
        const a = args as CallArgs<'signal'>;
        if (!this.jobs.has(a.stream)) return { value: {} };
        await this.agent.request('kill', [
          `s${a.stream}`,
          a.signal.replace(/^SIG/, ''),
          a.group ? 'family' : 'root',
        ]);
        return { value: {} };
      }
      case 'fs.read':
        return this.read(args);
      case 'fs.write': {
        const a = args as CallArgs<'fs.write'>;
        // this agent cannot promise a walk without links: the host resolves the path first
        if (a.noLinks) return { value: { bytesWritten: 0, created: false, linked: true } };
        return { value: await this.writeFile(a.path, attachment ?? Buffer.alloc(0), a.overwrite) };
      }
      case 'fs.list':
        return { value: await this.list(args) };
      case 'fs.realpath':
      case 'fs.readlink':
      case 'which': {
        const a = args as { path?: string; name?: string };
        const [r] = await this.agent.request(op.replace(/^fs\./, ''), [field(a.path ?? a.name ?? '')]);
        const text = r === '-' ? null : bytesOf(r).toString('utf8');
        return { value: op === 'fs.readlink' ? { target: text } : { path: text } };
      }
      case 'pty.open': {
        const a = args as CallArgs<'pty.open'>;
        const opened = this.openTerminal(a);
        await this.agent.request('winsize', [a.rows, a.cols]);
        return { value: opened };
      }
      case 'pty.write':
        this.link.send(2, attachment ?? Buffer.alloc(0));
        return { value: {} };
      case 'pty.resize': {
        const a = args as CallArgs<'pty.resize'>;
        if (this.terminal === a.stream) await this.agent.request('winsize', [a.rows, a.cols]);
        return { value: {} };
      }
      case 'tcp.open':
        return { value: await this.connections.open(args as CallArgs<'tcp.open'>) };
      case 'tcp.close':
        await this.connections.close((args as CallArgs<'tcp.close'>).stream);
        return { value: {} };
      case 'pty.close':
        this.closeTerminal((args as CallArgs<'pty.close'>).stream);
        return { value: {} };
      default:
        throw new AgentError('UNSUPPORTED_CAPABILITY', `a browser computer cannot do "${op}"`);
    }
  }

  private async read(a: CallArgs<'fs.read'>): Promise<{ value: unknown; attachment: Buffer }> {
    const parts: Buffer[] = [];
    let got = 0;
    let size = 0;
    let realpath = a.path;
    for (;;) {
      const want = Math.min(PULL_BYTES, a.byteLimit - got);
      const [s, data, real] = await this.agent.request('read', [field(a.path), a.offset + got, want]);
      size = Number(s);
      realpath = bytesOf(real).toString('utf8') || a.path;
      const bytes = bytesOf(data);
      parts.push(bytes);
      got += bytes.length;
      if (bytes.length < want || got >= a.byteLimit) break;
    }
    const eof = a.offset + got >= size;
    return { value: { bytesRead: got, size, eof, realpath }, attachment: Buffer.concat(parts) };
  }

  private async writeFile(path: string, data: Buffer, overwrite: boolean) {
    const token = randomBytes(6).toString('hex');
    const p = field(path);
    for (let at = 0; at === 0 || at < data.length; at += PUT_CHUNK_BYTES) {
      const chunk = data.subarray(at, at + PUT_CHUNK_BYTES).toString('base64');
      await this.agent.request('put', [token, p, chunk.length], chunk);
    }
    const [bytes, created] = await this.agent.request('commit', [
      token,
      p,
      overwrite ? 'overwrite' : 'create',
    ]);
    return { bytesWritten: Number(bytes), created: created === 'true' };
  }

  private async list(a: CallArgs<'fs.list'>) {
    const [rows] = await this.agent.request('list', [field(a.path)]);
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
    return { path: a.path, total: entries.length, entries: entries.slice(a.offset, a.offset + a.limit) };
  }

  private openTerminal(a: CallArgs<'pty.open'>): { pid: number } {
    if (this.terminal !== null) {
      throw new AgentError(
        'UNSUPPORTED_CAPABILITY',
        'a browser computer has one terminal (its second serial port); close the open one first',
      );
    }
    this.terminal = a.stream;
    this.link.send(2, Buffer.from(`cd ${shellQuote(a.cwd)}\n`));
    return { pid: 1 };
  }

  private closeTerminal(stream: number): void {
    if (this.terminal !== stream) return;
    this.terminal = null;
    // a fresh shell for the next terminal: init starts one when this one exits
    this.link.send(2, Buffer.from('\x03exit\n'));
    this.send(FrameKind.End, stream, 1, Buffer.alloc(0));
    this.message({ t: 'pty.exit', stream, exitCode: 0, signal: null });
  }
}

function guestError(e: unknown): GuestError {
  if (e instanceof GuestFailure) return toGuestError(e);
  if (e instanceof AgentError) {
    const code = guestErrorCodeSchema.safeParse(e.code);
    return { code: code.success ? code.data : 'INTERNAL', message: e.message };
  }
  return { code: 'INTERNAL', message: (e as Error).message ?? String(e) };
}
