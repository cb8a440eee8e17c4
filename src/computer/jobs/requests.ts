/**
 * Job requests as the tools make them: argument checks, start and wait, cancel.
 */
import { PaddockError } from '../../shared/errors.js';
import type { CallerContext } from '../../tools/tool.js';
import type { Computer } from '../computer.js';
import { GUEST_WORKSPACE } from '../link/guest-layout.js';
import type { ComputerLog } from '../logs.js';
import { checkGuestPath } from '../paths.js';
import type { Job, JobResult } from './job.js';
import type { ToolChannel } from './tool-channel.js';

/** Output returned inline by run_command (continue with read_job). */
export const RUN_COMMAND_OUTPUT_BYTES = 16_384;
/** Largest script in UTF-8 bytes (the schema bounds characters; this bounds bytes). */
export const MAX_SCRIPT_BYTES = 256 * 1024;

/** A job request as the tools pass it (policy checks already done). */
export interface RunRequest {
  script: string;
  cwd?: string;
  env?: Record<string, string>;
  waitMs: number;
  timeoutMs: number;
  /** Run this argv directly instead of the script (the `shell` built-in). */
  argv?: string[];
  /** Output returned inline; default RUN_COMMAND_OUTPUT_BYTES. */
  outputBytes?: number;
  /** Open the tool channel for this caller (the `run_command` / `shell` invocation is the parent). */
  channel?: { caller: CallerContext; parentId: string };
}

/** What cancel_job answers. */
export interface CancelResult {
  [key: string]: unknown;
  jobId: string;
  status: 'cancelled' | 'cancelling' | 'already_finished';
  exitCode: number | null;
  signal: string | null;
  canceled: boolean;
  terminationObserved: boolean;
}

/** Job environment names and values a caller may set. */
export function checkEnv(env: Record<string, string>): Record<string, string> {
  for (const [k, v] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(k)) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `"${k.slice(0, 64)}" is not a valid environment variable name; use letters, digits and "_".`,
      );
    }
    if (k.startsWith('PADDOCK_'))
      throw new PaddockError('INVALID_ARGUMENT', `${k} is reserved for Paddock; use another name.`);
    if (v.includes('\0'))
      throw new PaddockError('INVALID_ARGUMENT', `The value of ${k} contains a NUL character; remove it.`);
    if (v.length > 8192) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `The value of ${k} is longer than 8192 characters; pass large data in a file.`,
      );
    }
  }
  return env;
}

/** Starts a job on `c` and waits up to `waitMs` for it. */
export async function startJobOn(
  c: Computer,
  req: RunRequest,
  retentionBytes: number,
  signal?: AbortSignal,
  openChannel?: (jobId: string) => ToolChannel | null,
): Promise<JobResult> {
  const cwd = checkGuestPath(req.cwd ?? GUEST_WORKSPACE, 'cwd');
  const env = checkEnv(req.env ?? {});
  if (Buffer.byteLength(req.script) > MAX_SCRIPT_BYTES) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The script is larger than ${MAX_SCRIPT_BYTES} bytes of UTF-8; write it to a file with write_file and run the file.`,
    );
  }
  const job = await c.startJob(
    {
      script: req.script,
      cwd,
      env,
      timeoutMs: req.timeoutMs,
      argv: req.argv,
      channel: openChannel,
      ...(req.channel ? { lineage: req.channel } : {}),
    },
    retentionBytes,
  );
  await job.waitForExit(req.waitMs, signal);
  return job.read(undefined, req.outputBytes ?? RUN_COMMAND_OUTPUT_BYTES);
}

/** Kills a job and every descendant; `cancelling` when they are not all gone within a second. */
export async function cancelJobOn(c: Computer, job: Job, log: ComputerLog): Promise<CancelResult> {
  const shape = (status: CancelResult['status']): CancelResult => ({
    jobId: job.id,
    status,
    exitCode: job.exitCode,
    signal: job.signal,
    canceled: job.canceled,
    terminationObserved: job.terminationObserved,
  });
  if (c.familyGone(job)) {
    // Without a cgroup a finished root may have left members in its session: reach them anyway.
    if (!job.family) await c.killFamily(job);
    return shape('already_finished');
  }
  job.canceled = true;
  await c.killFamily(job);
  log.add('warn', 'job.cancel', `${job.id} was cancelled with every descendant.`, {
    generation: c.generation,
    jobId: job.id,
  });
  const deadline = Date.now() + 1000;
  while (Date.now() < deadline && !c.familyGone(job)) await new Promise((r) => setTimeout(r, 5));
  return shape(c.familyGone(job) ? 'cancelled' : 'cancelling');
}

/** `p`, or a TIMEOUT as soon as `signal` aborts. */
export function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  const aborted = () =>
    new PaddockError('TIMEOUT', 'The call was cancelled while the computer was booting; retry.');
  if (signal.aborted) return Promise.reject(aborted());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(aborted());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
