/**
 * list_terminals, create_terminal, switch_terminal, send_terminal_input, read_terminal_output.
 */
import { PaddockError } from '../../shared/errors.js';
import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import type { ComputerSource } from '../manager.js';
import { computerTool, inputObject, requestIdProperty, structured } from './common.js';

/** The control keys send_terminal_input accepts (in the reference's order) and the bytes a terminal sends for each. */
export const TERMINAL_KEYS = {
  enter: '\r',
  ctrl_c: '\x03',
  ctrl_d: '\x04',
  ctrl_z: '\x1a',
  tab: '\t',
  escape: '\x1b',
  backspace: '\x7f',
  up: '\x1b[A',
  down: '\x1b[B',
  left: '\x1b[D',
  right: '\x1b[C',
} as const;
export type TerminalKey = keyof typeof TERMINAL_KEYS;

/** Longest text of one send_terminal_input, in characters. */
export const MAX_TERMINAL_TEXT_CHARS = 65_536;
/** Default and largest byteLimit of read_terminal_output. */
export const TERMINAL_READ_DEFAULT_BYTES = 4096;
export const TERMINAL_READ_MAX_BYTES = 65_536;

const terminalIdProperty = s.string({
  description:
    'The terminal id from list_terminals or create_terminal, e.g. "g2.term1" (it names the generation).',
  maxLength: 160,
});

/** The key names in the reference's order. */
const TERMINAL_KEY_NAMES = Object.keys(TERMINAL_KEYS) as TerminalKey[];

/** The bytes for one send_terminal_input: text (each newline pressed as Enter) or one key. */
export function terminalInputBytes(text: unknown, key: unknown): { data: string; key: TerminalKey | null } {
  if (text !== undefined && key !== undefined) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'Pass either text or key, not both: send the text first, then the key in a second call.',
    );
  }
  if (key !== undefined) {
    if (typeof key !== 'string' || !Object.hasOwn(TERMINAL_KEYS, key)) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `Unknown key "${String(key).slice(0, 32)}"; use one of ${Object.keys(TERMINAL_KEYS).join(', ')}, or send characters as text.`,
      );
    }
    return { data: TERMINAL_KEYS[key as TerminalKey], key: key as TerminalKey };
  }
  if (typeof text !== 'string' || text.length === 0) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'Pass the characters to type as text (end with \\n to press Enter), or one control key as key.',
    );
  }
  if (text.length > MAX_TERMINAL_TEXT_CHARS) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The text is longer than ${MAX_TERMINAL_TEXT_CHARS} characters; send it in parts, or write it to a file with write_file.`,
    );
  }
  return { data: text.replace(/\r?\n/g, '\r'), key: null };
}

export function terminalTools(computers: ComputerSource): Tool[] {
  return [
    computerTool(computers, {
      name: 'list_terminals',
      title: 'List terminals',
      kind: 'answer',
      description:
        'Lists the interactive terminals of the current computer, the same ones the person sees as tabs in the dock: each with its generation-qualified id (e.g. g2.term1), a label, whether its PTY is ready for input, whether it is the active (visible) one and whether its shell has exited. ' +
        'ready only means the PTY is attached: it does not mean a prompt is showing or that a login succeeded, so read the output before relying on it. ' +
        'heldBy names a person who has taken control of that terminal: until it is null again, do not type into it (your input would be refused). ' +
        'Use terminals for interactive programs (REPLs, prompts, long sessions); for one-off commands whose exit code matters, run_command is simpler.',
      input: inputObject({}, []),
      async execute(_input, ctx) {
        const manager = computers.for(ctx.caller);
        const terminals = manager.terminals;
        const c = manager.computer;
        const list = terminals.list();
        return structured({
          generation: c?.generation ?? null,
          lifecycle: c?.lifecycle ?? 'none',
          activeTerminalId: list.find((t) => t.active)?.id ?? null,
          terminals: list,
        });
      },
    }),
    computerTool(computers, {
      name: 'create_terminal',
      idempotent: true,
      title: 'Create a terminal',
      kind: 'act',
      description:
        "Opens a new interactive terminal in the current computer: the guest account's login shell on a PTY of its own, with its own shell variables and working directory but the same files as every other terminal and job. " +
        'By default the new terminal becomes the active one and the dock shows it to the person; activate=false leaves the selection as it is. ' +
        'Returns the terminal id and whether the PTY is ready. The shell starts exactly as a login would (nothing is bypassed) and may still be printing its prompt, so call read_terminal_output before typing something that depends on it. ' +
        'Retrying with the same requestId returns the same terminal instead of opening another.',
      input: inputObject(
        {
          activate: s.boolean({
            description: 'Make the new terminal the active one and show it in the dock; default true.',
          }),
          requestId: requestIdProperty,
        },
        [],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const terminals = manager.terminals;
        const info = await terminals.create({ activate: input.activate !== false, signal: ctx.signal });
        return structured({ terminalId: info.id, ...info });
      },
    }),
    computerTool(computers, {
      name: 'switch_terminal',
      title: 'Switch terminal',
      kind: 'act',
      description:
        'Makes an existing terminal the active one and shows it to the person in the dock. Its shell, working directory and running programs stay exactly as they are, and nothing is typed into it; use send_terminal_input for that.',
      input: inputObject({ terminalId: terminalIdProperty }, ['terminalId']),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const terminals = manager.terminals;
        const { terminalId } = input;
        terminals.resolve(terminalId);
        const previous = terminals.active()?.id ?? null;
        await terminals.activate(terminalId);
        return structured({ terminalId, active: true, previousTerminalId: previous });
      },
    }),
    computerTool(computers, {
      name: 'send_terminal_input',
      title: 'Type into a terminal',
      kind: 'transact',
      description:
        'Types into an interactive terminal that the person in the dock shares with you: either text (a newline presses Enter, so end a command line with \\n) or exactly one control key such as ctrl_c to interrupt the running program — never both in one call. ' +
        'The input goes to whatever is in the foreground: the shell prompt, a login prompt or a running program. ' +
        'The answer only confirms that the bytes reached the terminal; it does not mean a command ran, finished or succeeded. Call read_terminal_output with your last cursor afterwards to see what happened. ' +
        "Every input is recorded as yours in the terminal's journal, which the person sees. When the person has taken control of the terminal (list_terminals shows heldBy), your input is refused with TERMINAL_HELD_BY_PERSON and nothing is typed: wait for heldBy to be null, or use another terminal.",
      input: inputObject(
        {
          terminalId: terminalIdProperty,
          text: s.string({
            description: 'Characters to type, sent as they are; each \\n presses Enter (e.g. "ls -la\\n").',
            maxLength: 65536,
          }),
          key: s.enum(TERMINAL_KEY_NAMES, {
            description:
              'One control key to press instead of text (e.g. ctrl_c to interrupt, up for history).',
          }),
        },
        ['terminalId'],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const terminals = manager.terminals;
        const { terminalId } = input;
        const { data, key } = terminalInputBytes(input.text, input.key);
        await terminals.write(terminalId, data, { source: 'agent', who: ctx.caller.caller });
        return structured({ terminalId, delivered: true, bytes: Buffer.byteLength(data), key });
      },
    }),
    computerTool(computers, {
      name: 'read_terminal_output',
      title: 'Read terminal output',
      kind: 'answer',
      description:
        'Reads what an interactive terminal printed — stdout and stderr merged, ANSI escape sequences included as the programs sent them. ' +
        'Pass the nextCursor of your previous read to get only what is new (omit the cursor to start at the oldest output still kept) and read again at once while moreBytes is above zero. ' +
        'There is no exit status per command here: look for the prompt in the text, or use run_command when you need exit codes. Each terminal keeps only its newest output (1 MiB by default); a cursor that fell behind answers OUTPUT_EXPIRED with an oldestCursor to continue from.',
      input: inputObject(
        {
          terminalId: terminalIdProperty,
          cursor: s.string({
            description:
              'nextCursor of your previous read of this terminal; omit to start at the oldest kept output.',
            maxLength: 200,
          }),
          byteLimit: s.integer({
            description: 'Most bytes of output to return; default 4096, maximum 65536.',
            minimum: 1,
            maximum: 65536,
          }),
        },
        ['terminalId'],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const terminals = manager.terminals;
        const { terminalId } = input;
        const byteLimit = input.byteLimit ?? TERMINAL_READ_DEFAULT_BYTES;
        if (byteLimit < 1 || byteLimit > TERMINAL_READ_MAX_BYTES) {
          throw new PaddockError(
            'INVALID_ARGUMENT',
            'byteLimit must be between 1 and 65536; pass a value in range.',
          );
        }
        const result = terminals.read(terminalId, input.cursor, byteLimit);
        return structured(result);
      },
    }),
  ];
}
