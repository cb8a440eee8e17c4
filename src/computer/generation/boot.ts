/**
 * Booting a sandbox up to its guest agent's hello: the backend starts it, a guest link is opened
 * on its stdio, and the agent must answer in time with our protocol version. A cold launch and
 * the warm pool boot the same way; what the guest sends afterwards goes to the handlers of the
 * generation that attaches to the sandbox (nothing is attached while it waits in the pool).
 */
import { rm } from 'node:fs/promises';
import type { ProfileConfig } from '../../config/computer-schema.js';
import { PROTOCOL_VERSION } from '../../guest/frames.js';
import type { Hello } from '../../guest/protocol.js';
import { raceAbort } from '../../shared/abort.js';
import { PaddockError } from '../../shared/errors.js';
import type { ComputerBackend, SandboxImage, SandboxInstance, SandboxSpec } from '../backend/types.js';
import { GuestClient, type GuestHandlers } from '../link/guest-client.js';
import { baseJobEnv } from '../link/guest-layout.js';

/** Programs whose presence the guest reports (status and profile checks). */
export const PROBE = ['bash', 'sh', 'python3', 'node', 'npm', 'git', 'curl'];

const DIAGNOSTIC_TAIL_CHARS = 2000;

/** What a generation receives from its guest once attached (the hello came already). */
export type AttachedHandlers = Omit<GuestHandlers, 'onHello'>;

/** A sandbox whose guest agent said hello, ready for a generation to attach. */
export interface BootedSandbox {
  readonly instance: SandboxInstance;
  readonly client: GuestClient;
  readonly hello: Hello;
  /** Host directory the sandbox owns (removed with it or with the generation that takes it). */
  readonly hostDir: string;
  /** Milliseconds from the backend's launch to the hello. */
  readonly bootMs: number;
  /** From now on, what the guest sends goes to `handlers`. */
  attach(handlers: AttachedHandlers): void;
  /** The tail of the agent's diagnostics (its stderr), for error messages; empty when none. */
  diagnosticSuffix(): string;
  /** Kills the sandbox and removes its host directory. Idempotent. */
  destroy(): Promise<void>;
}

/** The generic parts of a sandbox of `profile`: nothing in it names a computer. */
export function sandboxSpec(
  profile: ProfileConfig,
  where: { generation: number; hostDir: string; name?: string; keptDir?: string; seedRoot?: string },
  files: Record<string, string | Uint8Array>,
  image?: SandboxImage,
): SandboxSpec {
  return {
    generation: where.generation,
    hostDir: where.hostDir,
    ...(where.name ? { name: where.name } : {}),
    ...(where.keptDir ? { keptDir: where.keptDir } : {}),
    ...(where.seedRoot ? { seedRoot: where.seedRoot } : {}),
    mounts: profile.mounts.map((m) => ({ source: m.source, target: m.target, readOnly: m.readOnly })),
    env: baseJobEnv('/bin/sh'),
    limits: profile.limits,
    networkMode: profile.networkMode,
    probe: PROBE,
    files,
    ...(profile.backend ? { backend: profile.backend } : {}),
    ...(image ? { image } : {}),
  };
}

/**
 * Starts `spec` and waits for its agent's hello. Rejects (with the sandbox destroyed) when the
 * sandbox exits first, the agent breaks the protocol or speaks another version, `timeoutMs`
 * passes, or `signal` aborts.
 */
export async function bootSandbox(
  backend: ComputerBackend,
  spec: SandboxSpec,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<BootedSandbox> {
  const started = performance.now();
  const instance = await backend.launch(spec);
  let tail = '';
  instance.diagnostics.on('data', (d: Buffer) => {
    tail = (tail + d.toString('utf8')).slice(-DIAGNOSTIC_TAIL_CHARS);
  });
  const diagnosticSuffix = () => {
    const t = tail.trim();
    return t ? `; guest output: ${t.slice(-500)}` : '';
  };
  let target: AttachedHandlers | null = null;
  let client: GuestClient | undefined;
  const hello = new Promise<Hello>((resolve, reject) => {
    client = new GuestClient(instance.fromGuest, instance.toGuest, {
      onHello: resolve,
      onEvent: (e) => target?.onEvent(e),
      onData: (stream, fd, payload) => target?.onData(stream, fd, payload),
      onEnd: (stream, fd) => target?.onEnd(stream, fd),
      onWindow: (stream, fd, bytes) => target?.onWindow?.(stream, fd, bytes),
      onBroken: (reason) => {
        if (target) target.onBroken(reason);
        else {
          // before any generation holds it, a broken link ends the sandbox
          reject(new Error(`the guest agent broke the protocol (${reason})`));
          void instance.destroy();
        }
      },
    });
  });
  let destroyed: Promise<void> | null = null;
  const destroy = () => {
    destroyed ??= instance
      .destroy()
      .then(() => rm(spec.hostDir, { recursive: true, force: true }))
      .catch(() => undefined);
    return destroyed;
  };
  const exitedEarly = instance.exited.then((how) => {
    throw new Error(`the sandbox exited during boot (${describeExit(how)})${diagnosticSuffix()}`);
  });
  try {
    if (options.signal?.aborted) throw new PaddockError('NOT_RUNNING', 'The boot was cancelled.');
    const { timeoutMs } = options;
    const signals = [AbortSignal.timeout(timeoutMs), ...(options.signal ? [options.signal] : [])];
    const said = await raceAbort(Promise.race([hello, exitedEarly]), AbortSignal.any(signals), {
      error: () =>
        options.signal?.aborted
          ? new PaddockError('NOT_RUNNING', 'The boot was cancelled.')
          : new Error(`no answer from the guest agent within ${timeoutMs} ms`),
    });
    if (said.version !== PROTOCOL_VERSION)
      throw new Error(`the guest agent speaks protocol ${said.version}, not ${PROTOCOL_VERSION}`);
    const bootMs = Math.round(performance.now() - started);
    return {
      instance,
      client: client!,
      hello: said,
      hostDir: spec.hostDir,
      bootMs,
      attach: (handlers) => {
        target = handlers;
      },
      diagnosticSuffix,
      destroy,
    };
  } catch (e) {
    exitedEarly.catch(() => undefined);
    await destroy();
    throw e;
  }
}

/** `signal SIGKILL`, `exit code 1`, or `it ended` (a backend with no process, such as a page that went away). */
export function describeExit(how: { exitCode: number | null; signal: string | null }): string {
  if (how.signal) return `signal ${how.signal}`;
  return how.exitCode === null ? 'it ended' : `exit code ${how.exitCode}`;
}
