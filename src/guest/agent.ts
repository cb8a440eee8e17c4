/**
 * The guest agent: the first program of every computer, running inside the sandbox as the
 * guest account. It speaks the framed protocol with the host over its stdio and does every
 * operation that must see the guest's view of the world (jobs, files; later PTYs, preview
 * relays and the tool channel).
 *
 * PID 1 of the sandbox is bwrap's minimal reaper, which collects orphaned processes; this
 * agent is its only direct child, so the sandbox lives exactly as long as the agent does.
 *
 * Run as `node agent.js [--probe name,name…]`. Imports only Node built-ins and files of this
 * directory: it runs from a read-only copy of dist/src/guest/ with nothing else available.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jobAccountFrom, jobScopeFrom } from './account.js';
import { closeInheritedDescriptors } from './descriptors.js';
import { EgressRelay } from './egress-relay.js';
import { JobRunner } from './exec.js';
import { GuestFailure, toGuestError } from './failure.js';
import { type Frame, FrameKind, PROTOCOL_VERSION, TELL_OPS } from './frames.js';
import { listFiles, readFile, resolveDir, whichOf, writeFile } from './fs-ops.js';
import { answerCall, type CallHandlers, WithAttachment } from './handlers.js';
import { GuestLink } from './link.js';
import { GuestNetwork } from './net.js';
import type { HostCall, HostTell } from './protocol.js';
import { PtyHost } from './pty.js';
import { spawnerFrom } from './spawner.js';
import { StdioPipes } from './stdio-pipes.js';
import { TcpRelay } from './tcp-relay.js';

function onPath(name: string): boolean {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      // Not in this directory.
    }
  }
  return false;
}

/** The login shell of the jobs' account from /etc/passwd, if it exists; else /bin/sh. */
function loginShell(uid: number): string {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const fields = line.split(':');
      if (Number(fields[2]) === uid && fields[6]) {
        accessSync(fields[6], constants.X_OK);
        return fields[6];
      }
    }
  } catch {
    // Fall through to sh.
  }
  return '/bin/sh';
}

function probeList(argv: string[]): string[] {
  const i = argv.indexOf('--probe');
  const list = i >= 0 ? argv[i + 1] : undefined;
  return list ? list.split(',').filter(Boolean) : [];
}

function main(): void {
  const inherited = closeInheritedDescriptors();
  // Node opens its inspector on SIGUSR1 unless a listener takes the signal; jobs cannot signal the
  // agent where they run as their own account, and this closes the door where they do not.
  process.on('SIGUSR1', () => undefined);
  const account = jobAccountFrom(process.argv);
  const scope = jobScopeFrom(process.argv, account);
  // On an image the agent's capabilities are ambient (it is not uid 0), so only the launcher,
  // which drops them, may start a job: without it the computer refuses to boot.
  const onImage = process.argv.includes('--require-scope');
  if (onImage && !scope) {
    process.stderr.write(
      'paddock: a computer on an image needs the job launcher (x86-64, Linux 5.19 or newer with Landlock); this host cannot run one\n',
    );
    process.exit(3);
  }
  const pipes = new StdioPipes(account, undefined, onImage ? scope : null);
  const spawner = spawnerFrom(process.argv, account, pipes);
  let runner: JobRunner | null = null;
  let ptys: PtyHost | null = null;
  const link = new GuestLink(
    (frame) => onFrame(frame),
    () => {
      runner?.killAll();
      ptys?.killAll();
      process.exit(0);
    },
  );
  runner = new JobRunner(link, account, scope, spawner, pipes);
  const jobs = runner;
  ptys = new PtyHost(link, account, scope);
  const terminals = ptys;
  const relay = new TcpRelay(link);
  const egress = new EgressRelay(link, relay);
  const network = new GuestNetwork(link, egress);
  /** Attachments of calls not dispatched yet, by call id. */
  const attachments = new Map<number, Buffer>();

  const handlers: CallHandlers = {
    ping: () => ({}),
    exec: (a) => jobs.exec(a),
    prepare: (a) => jobs.prepare(a),
    'channel.reply': (a) => jobs.channelReply(a.stream, a.id, a.body),
    release: (a) => {
      jobs.release(a.stream);
      return {};
    },
    signal: (a) => {
      jobs.signal(a.stream, a.signal, a.group);
      return {};
    },
    'fs.list': (a) => listFiles(a),
    'fs.read': (a) => readFile(a),
    'fs.write': (a, attachment) => writeFile(a, attachment ?? Buffer.alloc(0), account),
    'fs.resolve': (a) => resolveDir(a),
    which: (a) => whichOf(a),
    'pty.open': (a) => terminals.open(a),
    'pty.write': (a, attachment) => {
      terminals.write(a.stream, attachment ?? Buffer.alloc(0));
      return {};
    },
    'pty.resize': (a) => {
      terminals.resize(a.stream, a.cols, a.rows);
      return {};
    },
    'pty.close': (a) => {
      terminals.close(a.stream);
      return {};
    },
    'tcp.open': (a) => relay.open(a),
    'tcp.close': (a) => {
      relay.close(a.stream);
      return {};
    },
    'egress.listen': (a) => egress.listen(a),
    'net.listen': (a) => network.listen(a),
    'net.ports': (a) => network.setPorts(a),
  };
  const dispatch = (op: string, args: unknown, attachment: Buffer | undefined) =>
    answerCall(handlers, op, args, attachment, (unknown) => {
      return new GuestFailure(
        'UNSUPPORTED_CAPABILITY',
        `This guest agent does not support "${unknown}"; upgrade Paddock.`,
      );
    });

  function onFrame(frame: Frame): void {
    if (frame.kind === FrameKind.Attachment) {
      attachments.set(frame.stream, frame.payload);
      return;
    }
    // Host → guest stream frames belong to relayed connections (the preview).
    if (frame.kind === FrameKind.Data || frame.kind === FrameKind.End || frame.kind === FrameKind.Window) {
      relay.onFrame(frame);
      return;
    }
    if (frame.kind !== FrameKind.Control) return;
    let call: HostCall | HostTell;
    try {
      call = JSON.parse(frame.payload.toString('utf8')) as HostCall | HostTell;
    } catch {
      link.log('err', 'ignored a control frame that is not JSON');
      return;
    }
    if (call.t === 'tell') {
      const { op } = call;
      if (!TELL_OPS.includes(op)) {
        link.log('err', `ignored a one-way call of "${String(op)}", which needs a reply`);
        return;
      }
      dispatch(op, call.args, undefined).catch((e: unknown) =>
        link.log('warn', `one-way call "${op}" failed: ${toGuestError(e).message}`),
      );
      return;
    }
    if (call.t !== 'call') return;
    const attachment = attachments.get(call.id);
    attachments.delete(call.id);
    dispatch(call.op, call.args, attachment).then(
      (value) => {
        if (value instanceof WithAttachment) link.reply(call.id, value.value, value.attachment);
        else link.reply(call.id, value);
      },
      (e: unknown) => link.fail(call.id, toGuestError(e)),
    );
  }

  process.on('uncaughtException', (e) => {
    link.log('err', `guest agent crashed: ${e.message}`);
    process.exitCode = 70;
    setImmediate(() => process.exit(70));
  });
  process.on('SIGTERM', () => {
    jobs.killAll();
    terminals.killAll();
    process.exit(0);
  });

  if (inherited > 0) link.log('debug', `closed ${inherited} inherited descriptor(s) without close-on-exec`);
  const programs: Record<string, boolean> = {};
  for (const name of probeList(process.argv)) programs[name] = onPath(name);
  link.send({
    t: 'hello',
    version: PROTOCOL_VERSION,
    pid: process.pid,
    uid: process.getuid?.() ?? 0,
    nodeVersion: process.version,
    shell: loginShell(account?.uid ?? process.getuid?.() ?? -1),
    programs,
    jobIsolation: scope ? 'landlock' : 'none',
    confine: scope !== null,
  });
}

main();
