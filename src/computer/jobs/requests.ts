/**
 * Job requests as the tools make them and what cancel answers; the checks every request passes.
 */
import { PaddockError } from '../../shared/errors.js';
import type { CallerContext } from '../../tools/tool.js';

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
  /**
   * Confine the program (the `shell` built-in): it and everything it starts may execute only
   * `execute` and write only beneath `write` (see the guest's confine.ts).
   */
  confine?: { execute: string[]; write: string[] };
  /** A long-running service: no timeout kills it (cancel_job, a relaunch or the computer's end does). */
  background?: boolean;
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

/** One line of at most 120 characters that says what a job runs. */
export function summarizeCommand(req: Pick<RunRequest, 'argv' | 'script'>): string {
  const line = (req.argv ? req.argv.join(' ') : req.script).replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
