import { PaddockError } from '../shared/errors.js';

/** A configuration problem: one `path: message` line per problem; the CLI exits with 2. */
export class ConfigError extends PaddockError {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super('INVALID_ARGUMENT', `${file}: invalid configuration\n${problems.map((p) => `  ${p}`).join('\n')}`, {
      problems,
    });
    this.name = 'ConfigError';
  }
}
