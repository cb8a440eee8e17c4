import { type ParseArgsConfig, parseArgs } from 'node:util';
import { PaddockError } from '../shared/errors.js';
import { neutralizeControls } from '../shared/terminal-text.js';

/** The `--config` option every command accepts. */
export const CONFIG_OPTION = { config: { type: 'string' as const } };

/** Parses one command's arguments; unknown flags are a usage error naming the command. */
export function parseCommandArgs(
  command: string,
  args: string[],
  options: NonNullable<ParseArgsConfig['options']>,
  allowPositionals = true,
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  try {
    const parsed = parseArgs({ args, options, allowPositionals, strict: true });
    return {
      values: parsed.values as Record<string, string | boolean | string[] | undefined>,
      positionals: parsed.positionals,
    };
  } catch (e) {
    throw new UsageError(`${(e as Error).message}. See \`paddock ${command} --help\`.`);
  }
}

/** A command-line mistake: printed without a stack trace; exit code 64. */
export class UsageError extends PaddockError {
  constructor(message: string) {
    super('INVALID_ARGUMENT', message);
    this.name = 'UsageError';
  }
}

/** Parses a JSON argument of the command line, with a clear message when it is not JSON. */
export function parseJsonArg(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(
      `${what} is not valid JSON (${(e as Error).message}); quote it, e.g. '{"key":"value"}'.`,
    );
  }
}

/** Writes a line to stdout. */
export function out(text: string): void {
  // nothing a tool, upstream server or agent wrote may drive the operator's terminal
  process.stdout.write(`${neutralizeControls(text)}\n`);
}
