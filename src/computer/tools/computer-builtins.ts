/**
 * The built-ins that act on the computer: `list_dir` and `shell`. Together with the computer's
 * read_file and write_file (one implementation, also in the `builtin` tool set) they are the
 * file and shell group of the nine built-ins.
 */

import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import { resolveGuestDir } from '../files.js';
import { GUEST_WORKSPACE } from '../link/guest-layout.js';
import type { ComputerSource } from '../manager.js';
import { checkGuestPath } from '../paths.js';
import { computerTool, generationOf, inputObject, structured } from './common.js';
import { listFilesTool } from './file-tools.js';

/** Default and largest timeout of `shell`. */
export const SHELL_DEFAULT_TIMEOUT_MS = 60_000;
export const SHELL_MAX_TIMEOUT_MS = 300_000;
/** Output `shell` returns inline (the rest stays readable with read_job). */
export const SHELL_OUTPUT_BYTES = 65_536;

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
      'The program is killed with everything it started after timeoutMs (default 60 s, at most 300 s). The answer has the job shape of run_command with up to 64 KiB of output; more can be read with read_job. ' +
      'A program can call your tools from inside the computer with the paddock-tool command or the paddock_tool Python module.',
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
      const decision = await ctx.policy.enforce(
        { type: 'exec', argv, cwd },
        { which: manager.guestExecResolver(ctx.signal) },
      );
      ctx.notePolicyRule(decision.rule);
      // the job starts in the canonical cwd the guest reached within the read roots, which it
      // opens again without following links
      const where = await resolveGuestDir(c, ctx.policy.fileScope('read'), cwd, ctx.signal);
      const program = decision.resolved ?? argv[0]!;
      const result = await manager.runCommand(
        {
          script: '',
          argv: [program, ...(decision.launch?.args ?? []), ...argv.slice(1)],
          cwd: where.path,
          env: decision.launch?.env ?? {},
          waitMs: timeoutMs + 5_000,
          timeoutMs,
          outputBytes: SHELL_OUTPUT_BYTES,
          channel: { caller: ctx.caller, parentId: ctx.invocationId },
        },
        ctx.signal,
      );
      ctx.noteComputer({ generation: generationOf(result.jobId), jobId: result.jobId });
      return structured(result);
    },
  });
  return [listFilesTool(computers, 'list_dir', ['builtin', 'computer'], 'builtin'), shell];
}
