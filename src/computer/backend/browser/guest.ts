/**
 * The guest protocol of a browser computer, spoken on the server. The VM in the page runs a busybox
 * shell agent (scripts/browser-image/agent.sh) that knows a few line requests; this class turns
 * the host's framed calls (src/guest/protocol.ts) into those requests and the answers back into
 * frames, so the computer, its jobs, files and terminal work as over any other backend. Job output
 * is pushed: the guest sends each read of a job's stdout and stderr pipes, the end of each, and the
 * job's exit as events on the agent's port, and they become data, end and exit frames here.
 * Terminals are the guest's second serial port (one at a time).
 */
import { PassThrough, Writable } from 'node:stream';
import { GuestFailure, toGuestError } from '../../../guest/failure.js';
import {
  encodeFrame,
  type Frame,
  FrameDecoder,
  FrameKind,
  type FrameKindValue,
  PROTOCOL_VERSION,
} from '../../../guest/frames.js';
import { answerCall, type CallHandlers, WithAttachment } from '../../../guest/handlers.js';
import {
  type CallArgs,
  type GuestError,
  type GuestMessage,
  guestErrorCodeSchema,
} from '../../../guest/protocol.js';
import type { Disposable } from '../../../shared/disposable.js';
import { GUEST_WORKSPACE } from '../../link/guest-layout.js';
import { SHELL_INIT, shellInitText } from '../../shell-startup.js';
import { AgentError, AgentLine, type BrowserVmLink, bytesOf, field } from './agent-line.js';
import { BrowserConnections } from './connections.js';
import { BrowserFiles } from './files.js';
import { BrowserJobs, shellQuote } from './jobs.js';

/** The guest end of a browser computer's link: `toGuest` takes the host's frames, `fromGuest` gives ours. */
export class BrowserGuest {
  readonly fromGuest = new PassThrough();
  readonly toGuest: Writable;
  readonly diagnostics = new PassThrough();
  private readonly agent: AgentLine;
  private readonly jobs: BrowserJobs;
  private readonly files: BrowserFiles;
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
    this.files = new BrowserFiles(this.agent);
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
    const unknown = (op: string) =>
      new AgentError('UNSUPPORTED_CAPABILITY', `a browser computer cannot do "${op}"`);
    answerCall(this.handlers, call.op, call.args, attachment, unknown).then(
      (r) => {
        if (r instanceof WithAttachment) {
          this.send(FrameKind.Attachment, call.id, 0, r.attachment);
          this.message({ t: 'reply', id: call.id, ok: true, value: r.value });
        } else this.message({ t: 'reply', id: call.id, ok: true, value: r });
      },
      (e: unknown) => this.message({ t: 'reply', id: call.id, ok: false, error: guestError(e) }),
    );
  }

  /** What this guest answers to each call; what a browser computer cannot do says so. */
  private readonly handlers: CallHandlers = {
    ping: async () => {
      await this.agent.request('ping', []);
      return {};
    },
    exec: (a) => this.jobs.exec(a),
    prepare: () => cannot('prepare a spare shell'),
    'channel.reply': () => cannot('run the tool channel'),
    release: () => ({}),
    signal: async (a) => {
      if (this.jobs.has(a.stream)) {
        await this.agent.request('kill', [
          `s${a.stream}`,
          a.signal.replace(/^SIG/, ''),
          a.group ? 'family' : 'root',
        ]);
      }
      return {};
    },
    'fs.read': (a) => this.files.read(a),
    'fs.write': (a, attachment) => this.files.write(a, attachment ?? Buffer.alloc(0)),
    'fs.list': (a) => this.files.list(a),
    'fs.resolve': (a) => this.files.resolve(a),
    which: async (a) => {
      const [r] = await this.agent.request('which', [field(a.name)]);
      return { path: r === '-' ? null : bytesOf(r).toString('utf8') };
    },
    'pty.open': async (a) => {
      const opened = this.openTerminal(a);
      await this.agent.request('winsize', [a.rows, a.cols]);
      return opened;
    },
    'pty.write': (_a, attachment) => {
      this.link.send(2, attachment ?? Buffer.alloc(0));
      return {};
    },
    'pty.resize': async (a) => {
      if (this.terminal === a.stream) await this.agent.request('winsize', [a.rows, a.cols]);
      return {};
    },
    'pty.close': (a) => {
      this.closeTerminal(a.stream);
      return {};
    },
    'tcp.open': (a) => this.connections.open(a),
    'tcp.close': async (a) => {
      await this.connections.close(a.stream);
      return {};
    },
    'egress.listen': () => cannot('reach the network'),
    'net.listen': () => cannot('answer name lookups'),
    'net.ports': () => cannot('reach the network'),
  };

  /** Writes a file of the agent's own (a job's script, the shell's start-up file) at a canonical path. */
  private writeFile(path: string, data: Buffer, overwrite: boolean) {
    const cut = path.lastIndexOf('/');
    return this.files.place(path.slice(0, cut) || '/', path.slice(cut + 1), data, overwrite);
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

/** The refusal of an operation a browser computer has no way to do. */
function cannot(what: string): never {
  throw new AgentError('UNSUPPORTED_CAPABILITY', `a browser computer cannot ${what}`);
}
