/**
 * The built-ins that act on the computer: `list_dir` and `shell`. Together with the computer's
 * read_file and write_file (one implementation, also in the `builtin` tool set) they are the
 * file and shell group of the nine built-ins.
 */

import { type Confinement, NO_CONFINEMENT } from '../../policy/index.js';
import { PaddockError } from '../../shared/errors.js';
import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import { resolveGuestDir } from '../files.js';
import type { JobResult } from '../jobs/job.js';
import { GUEST_WORKSPACE } from '../link/guest-layout.js';
import type { ComputerSource } from '../manager.js';
import { checkGuestPath } from '../paths.js';
import { computerTool, inputObject, structured } from './common.js';
import { listFilesTool } from './file-tools.js';

/** Default and largest timeout of `shell`. */
export const SHELL_DEFAULT_TIMEOUT_MS = 60_000;
export const SHELL_MAX_TIMEOUT_MS = 300_000;
/** Output `shell` returns inline (the rest stays readable with read_job). */
export const SHELL_OUTPUT_BYTES = 65_536;

/**
 * What the answer of `shell` says about the confinement: the rule, what it let the program
 * execute and write, and — when the program failed with a permission error — which rule refused.
 */
function confinementOf(
  rule: string,
  program: string,
  confine: Confinement,
  result: JobResult,
): { confinement: Record<string, unknown> } {
  const refused = /Permission denied|EACCES|could not be started/.test(result.stderr);
  return {
    confinement: {
      rule,
      execute: [program, ...confine.helpers],
      write: confine.write,
      ...(refused
        ? {
            note: `The program met a permission error. Under shell, the kernel lets ${program} (rule ${rule}) execute only itself${confine.helpers.length > 0 ? ` and ${confine.helpers.join(', ')}` : ''} and write only under ${confine.write.length > 0 ? confine.write.join(', ') : 'nothing'}; run other programs with their own shell call, write inside those roots, or ask the operator to add helpers to the rule.`,
          }
        : {}),
    },
  };
}

/** list_dir and shell over the current computer. */
export function createComputerBuiltins(computers: ComputerSource): Tool[] {
  const shell = computerTool(computers, {
    name: 'shell',
    title: 'Run a program',
    kind: 'act',
    source: 'builtin',
    toolsets: ['builtin', 'computer'],
    description:
      'Runs one program inside the computer with the given arguments and waits for it to finish. There is no shell: argv goes straight to the program, so pipes, redirections, globs and variables are not interpreted. ' +
      "Only executables the policy allows can run (looked up on the computer's fixed PATH, with per-program argument rules); check a refusal's message for the rule. " +
      'The kernel holds the program to its rule: it and everything it starts may execute only that program and the helpers its rule names, and write only under the policy\'s writable roots, so `find -exec`, `awk system()` or a git alias cannot start anything else; `confinement` in the answer lists both, and a "Permission denied" from the program usually means one of them refused. ' +
      'The program is killed with everything it started after timeoutMs (default 60 s, at most 300 s). The answer has the job shape of run_command with up to 64 KiB of output; more can be read with read_job. ' +
      'A program can call your tools from inside the computer with the paddock_tool Python module or the Node client (the paddock-tool command is a shell script, so it runs only where the rule lets /bin/sh run).',
    input: inputObject(
      {
        argv: s.array({
          description: 'The program and its arguments, e.g. ["git", "status", "--short"].',
          items: s.string({ maxLength: 65536 }),
          minItems: 1,
          maxItems: 1024,
        }),
        cwd: s.string({
          description: 'Working directory inside the computer; default /workspace.',
          maxLength: 1024,
        }),
        timeoutMs: s.integer({
          description: 'Kill the program and its processes after this many ms; default 60000.',
          minimum: 1,
          maximum: SHELL_MAX_TIMEOUT_MS,
          default: SHELL_DEFAULT_TIMEOUT_MS,
        }),
      },
      ['argv'],
    ),
    async execute(input, ctx) {
      const manager = computers.for(ctx.caller);
      const { argv } = input;
      const cwd = checkGuestPath(input.cwd ?? GUEST_WORKSPACE, 'cwd');
      const timeoutMs = Math.min(input.timeoutMs ?? SHELL_DEFAULT_TIMEOUT_MS, SHELL_MAX_TIMEOUT_MS);
      const c = await manager.requireRunning(ctx.signal);
      if (!c.hello?.confine) {
        throw new PaddockError(
          'UNSUPPORTED_CAPABILITY',
          'This computer cannot hold a program to its exec rule in the kernel (it needs Landlock, on x86-64 Linux 5.13 or newer), so shell refuses to run anything here; use run_command, or a computer on such a host.',
        );
      }
      const decision = await ctx.policy.enforce(
        { type: 'exec', argv, cwd },
        { which: manager.guestExecResolver(ctx.signal) },
      );
      ctx.notePolicyRule(decision.rule);
      // the job starts in the canonical cwd the guest reached within the read roots, which it
      // opens again without following links
      const where = await resolveGuestDir(c, ctx.policy.fileScope('read'), cwd, ctx.signal);
      const program = decision.resolved ?? argv[0]!;
      const confine = decision.confine ?? NO_CONFINEMENT;
      const result = await manager.runCommand(
        {
          script: '',
          argv: [program, ...(decision.launch?.args ?? []), ...argv.slice(1)],
          cwd: where.path,
          env: decision.launch?.env ?? {},
          waitMs: timeoutMs + 5_000,
          timeoutMs,
          outputBytes: SHELL_OUTPUT_BYTES,
          confine: { execute: [program, ...confine.helpers], write: confine.write },
          channel: { caller: ctx.caller, parentId: ctx.invocationId },
        },
        ctx.signal,
      );
      return structured({ ...result, ...confinementOf(decision.rule, program, confine, result) });
    },
  });
  return [listFilesTool(computers, 'list_dir', ['builtin', 'computer'], 'builtin'), shell];
}
