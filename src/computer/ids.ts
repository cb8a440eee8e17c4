/**
 * The ids of a computer's jobs and terminals: `g<generation>.job<n>` and `g<generation>.term<n>`,
 * unique across computers and generations. Made and parsed here only; the branded types keep an
 * id from being mistaken for any other string.
 */
import { PaddockError } from '../shared/errors.js';

/** A job's id, e.g. `g3.job12`. */
export type JobId = string & { readonly __brand: 'JobId' };
/** A terminal's id, e.g. `g3.term2`. */
export type TerminalId = string & { readonly __brand: 'TerminalId' };

const ID_PATTERN = /^g([1-9]\d{0,8})\.(job|term)([1-9]\d{0,8})$/;

/** A parsed id. */
export interface ParsedId {
  generation: number;
  kind: 'job' | 'term';
  n: number;
}

/** The id of job `n` of `generation`. */
export function jobId(generation: number, n: number): JobId {
  return `g${generation}.job${n}` as JobId;
}

/** The id of terminal `n` of `generation`. */
export function terminalId(generation: number, n: number): TerminalId {
  return `g${generation}.term${n}` as TerminalId;
}

/** `g3.job12` → its parts; INVALID_ARGUMENT, saying what ids look like, when it is not one of `expected`. */
export function parseId(id: string, expected: 'job' | 'term'): ParsedId {
  const m = ID_PATTERN.exec(id);
  if (!m || m[2] !== expected) {
    const example = expected === 'job' ? 'g1.job3' : 'g1.term2';
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `"${id.slice(0, 160)}" is not a ${expected === 'job' ? 'job' : 'terminal'} id (they look like ${example}); use the id returned by ${expected === 'job' ? 'run_command' : 'create_terminal'}.`,
    );
  }
  return { generation: Number(m[1]), kind: expected, n: Number(m[3]) };
}

/** The generation a job or terminal id names, or undefined when the text is no such id. */
export function generationOfId(id: unknown): number | undefined {
  if (typeof id !== 'string') return undefined;
  const m = ID_PATTERN.exec(id);
  return m ? Number(m[1]) : undefined;
}
