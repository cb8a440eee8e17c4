/**
 * run_command, read_job, cancel_job.
 */

import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import { checkpointBeforeCall } from '../checkpoint-actions.js';
import type { ComputerSource } from '../manager.js';
import { computerTool, guestPathProperty, inputObject, requestIdProperty, structured } from './common.js';

/** Default and bounds of run_command. */
export const RUN_COMMAND_DEFAULT_WAIT_MS = 1000;
export const RUN_COMMAND_DEFAULT_TIMEOUT_MS = 30_000;
/** Default bytes of one read_job. */
export const READ_DEFAULT_BYTES = 4096;
/** Longest read_job waitMs. */
export const READ_JOB_MAX_WAIT_MS = 10_000;

const jobIdProperty = s.string({
  description: 'The job id that run_command returned, e.g. "g2.job5".',
  maxLength: 160,
});

export function jobTools(computers: ComputerSource): Tool[] {
  return [
    computerTool(computers, {
      name: 'run_command',
      title: 'Run a command',
      kind: 'act',
      idempotent: true,
      description:
        'Runs a non-interactive shell script once inside the current computer, through the login shell of the guest account you act as (bash where available). ' +
        'Use it to build, test, install, process data or start servers with whatever programs the profile provides. Each job has its own working directory and environment, separate stdout and stderr, no stdin (a program that waits for input gets end-of-file), and owns every process it starts. ' +
        'The call waits up to waitMs for the job to finish and returns its id, the output so far, a nextCursor and the exit code (null while it runs). timeoutMs kills the job and everything it started; background processes otherwise keep running after the script exits, until the timeout, cancel_job or a relaunch. ' +
        'If terminationObserved is false, keep calling read_job with nextCursor until it is true instead of running the command again; state says running, exited, killed, timed_out or cancelled. ' +
        'For a dev server or anything meant to keep running, pass background: true: the job is then a service that no timeout ends (cancel_job, a relaunch or the end of the computer does), get_computer_status lists it with the ports it listens on, and navigate_preview can show any of those ports. ' +
        'egressRefused lists network destinations the egress policy refused (host, port, rule; stderr has a line saying how to allow each): retrying will not help, ask the operator to allow them. ' +
        'A script can call your tools directly from inside the computer with the paddock-tool command or the paddock_tool Python module, so one script can look something up, decide and act in a single run.',
      input: inputObject(
        {
          script: s.string({
            description: 'The shell script to run once (several lines are fine).',
            maxLength: 65536,
          }),
          cwd: guestPathProperty(
            'Working directory: an absolute guest path without ".", ".." or empty segments, NUL or backslashes. Default /workspace.',
          ),
          env: s.record(s.string({ description: 'The value of the variable.', maxLength: 8192 }), {
            description:
              'Extra environment variables for this job. Variables that could hijack programs (LD_PRELOAD, BASH_ENV, NODE_OPTIONS…) are dropped.',
          }),
          waitMs: s.integer({
            description:
              'How long this call waits for the job to finish before answering, in ms; default 1000. The job keeps running after the answer.',
            minimum: 0,
            maximum: 10000,
          }),
          timeoutMs: s.integer({
            description:
              'When to kill the job and all its processes, in ms from its start; default 30000. Ignored with background: true.',
            minimum: 1,
            maximum: 300000,
          }),
          background: s.boolean({
            description:
              'Run as a long-lived service (a web or dev server): not ended by timeoutMs, listed with its ports by get_computer_status, ended by cancel_job or with the computer. Default false.',
          }),
          requestId: requestIdProperty,
        },
        ['script'],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        // computer.checkpoints.before: [run_command] makes every command undoable
        if (manager.checkpointsBeforeRunCommand) {
          await manager.requireRunning(ctx.signal);
          await checkpointBeforeCall(
            manager,
            'run_command',
            { invocationId: ctx.invocationId, tool: 'run_command', approvalId: null },
            ctx.signal,
          );
        }
        const result = await manager.runCommand(
          {
            script: input.script,
            cwd: input.cwd,
            env: ctx.policy.sanitizeEnv(input.env ?? {}),
            waitMs: input.waitMs ?? RUN_COMMAND_DEFAULT_WAIT_MS,
            timeoutMs: input.timeoutMs ?? RUN_COMMAND_DEFAULT_TIMEOUT_MS,
            ...(input.background ? { background: true } : {}),
            channel: { caller: ctx.caller, parentId: ctx.invocationId },
          },
          ctx.signal,
        );
        return structured(result);
      },
    }),
    computerTool(computers, {
      name: 'read_job',
      title: 'Read job output',
      kind: 'answer',
      description:
        'Reads the next stdout and stderr of a job started by run_command, with its state (running, exited, killed, timed_out or cancelled): exitCode stays null until the exit is observed, and terminationObserved tells you the job has ended. ' +
        'Pass waitMs to let the call wait (up to 10000 ms) until there is output after the cursor or the job ends, instead of polling in a tight loop. ' +
        'Pass the nextCursor of the previous answer to continue; omit the cursor to start at the oldest output still kept. Each stream keeps only its newest output (1 MiB by default): a cursor that fell behind answers OUTPUT_EXPIRED with an oldestCursor to resume from. ' +
        'Poll until terminationObserved is true. Jobs belong to one computer generation and are gone after a relaunch.',
      input: inputObject(
        {
          jobId: jobIdProperty,
          cursor: s.string({
            description:
              'nextCursor from the previous read of this job; omit to start at the oldest kept output.',
            maxLength: 200,
          }),
          byteLimit: s.integer({
            description:
              'Most bytes of output to return across stdout and stderr; default 4096, maximum 65536.',
            minimum: 1,
            maximum: 65536,
          }),
          waitMs: s.integer({
            description:
              'Wait up to this many ms for output after the cursor or for the job to end, answering as soon as either happens; default 0 (answer at once).',
            minimum: 0,
            maximum: READ_JOB_MAX_WAIT_MS,
          }),
        },
        ['jobId'],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const { jobId } = input;
        const byteLimit = input.byteLimit ?? READ_DEFAULT_BYTES;
        const result = input.waitMs
          ? await manager.readJobWhenChanged(jobId, input.cursor, byteLimit, input.waitMs, ctx.signal)
          : manager.readJob(jobId, input.cursor, byteLimit);
        return structured(result);
      },
    }),
    computerTool(computers, {
      name: 'cancel_job',
      title: 'Cancel a job',
      kind: 'transact',
      description:
        'Stops a job started by run_command together with every process it started, even ones that detached into their own session or process group; processes of other jobs are left alone. ' +
        'Answers cancelled when everything is gone, cancelling if some processes are still being torn down (call read_job until terminationObserved is true), or already_finished. ' +
        'When get_computer_status reports processFamilies "session" (a server without cgroups), only the job\'s own process group can be reached.',
      input: inputObject({ jobId: jobIdProperty }, ['jobId']),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const { jobId } = input;
        const result = await manager.cancelJob(jobId);
        return structured(result);
      },
    }),
  ];
}
