/**
 * One line a person reads for a tool call: what it does with its key arguments
 * (`run_command: npm test (in /workspace/app)`), from the redacted input the audit row or the
 * approval holds. Display only; the exact arguments stay one click away.
 */

/** Longest summary, in characters. */
const MAX_SUMMARY = 160;

/** Arguments a summary names first, in this order, when a tool has no sentence of its own. */
const KEY_ARGUMENTS = [
  'script',
  'path',
  'url',
  'query',
  'text',
  'profileId',
  'jobId',
  'terminalId',
  'name',
  'key',
];

type Args = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** One line: whitespace folded, cut with an ellipsis. */
function oneLine(text: string, max = MAX_SUMMARY): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Sentences for the tools whose calls people see most. */
const SENTENCES: Record<string, (a: Args) => string | null> = {
  run_command: (a) =>
    str(a.script) &&
    `runs ${oneLine(String(a.script), 100)}${a.background ? ' as a service' : ''}${str(a.cwd) ? ` in ${a.cwd}` : ''}`,
  read_job: (a) => str(a.jobId) && `reads the output of ${a.jobId}`,
  cancel_job: (a) => str(a.jobId) && `cancels ${a.jobId}`,
  read_file: (a) => str(a.path) && `reads ${a.path}`,
  write_file: (a) =>
    str(a.path) &&
    `writes ${a.path}${typeof a.content === 'string' ? ` (${a.content.length.toLocaleString()} characters)` : ''}`,
  list_files: (a) => str(a.path) && `lists ${a.path}`,
  launch_computer: (a) =>
    str(a.profileId) && `launches a ${a.profileId} computer${a.keepWorkspace ? ', keeping /workspace' : ''}`,
  navigate_preview: (a) => str(a.path) && `shows ${a.port ? `port ${a.port} ` : ''}${a.path} in the preview`,
  send_terminal_input: (a) =>
    str(a.text) ? `types ${oneLine(String(a.text), 80)}` : str(a.key) ? `presses ${a.key}` : null,
  http_get: (a) => str(a.url) && `GET ${a.url}`,
  http_post: (a) => str(a.url) && `POST to ${a.url}`,
  save_memory: (a) => str(a.content) && `remembers “${oneLine(String(a.content), 80)}”`,
  recall_memory: (a) => str(a.query) && `recalls “${oneLine(String(a.query), 80)}”`,
  egress: (a) =>
    str(a.host) &&
    `${typeof a.kind === 'string' ? `${a.kind} ` : ''}${a.host}:${typeof a.port === 'number' ? a.port : '?'}`,
};

/** A person's line for a call of `tool` with `input` (JSON text, possibly cut or redacted). */
export function summarizeCall(tool: string, input: string): string {
  let args: unknown;
  try {
    args = JSON.parse(input);
  } catch {
    return input.trim() ? oneLine(input) : '';
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) return '';
  const a = args as Args;
  const sentence = SENTENCES[tool]?.(a);
  if (sentence) return oneLine(sentence);
  const keys = [
    ...KEY_ARGUMENTS.filter((k) => k in a),
    ...Object.keys(a).filter((k) => !KEY_ARGUMENTS.includes(k)),
  ];
  const parts = keys
    .slice(0, 3)
    .map((k) => `${k}=${oneLine(typeof a[k] === 'string' ? String(a[k]) : JSON.stringify(a[k]), 60)}`);
  return oneLine(parts.join(', '));
}
