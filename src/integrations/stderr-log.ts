import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { redactSecrets, redactText } from '../shared/redact.js';
import { neutralizeControls } from '../shared/terminal-text.js';

/** Longest stderr line kept; longer lines are cut (a server writing megabytes without a newline stays bounded). */
export const MAX_STDERR_LINE_CHARS = 4096;

/**
 * The last lines a server wrote to stderr (plus Paddock's own `[paddock] …` markers for
 * starts and exits), bounded to `maxLines`, kept across restarts for `paddock servers logs`.
 */
export class StderrLog {
  private readonly lines: string[] = [];

  constructor(
    private readonly maxLines: number,
    private readonly onLine: (line: string) => void,
  ) {}

  /** Splits a stream into lines as they arrive; a trailing partial line is flushed at end. */
  follow(stream: Readable): void {
    const decoder = new StringDecoder('utf8');
    let partial = '';
    const flushLines = (text: string) => {
      partial += text;
      let nl = partial.indexOf('\n');
      while (nl !== -1) {
        this.add(partial.slice(0, nl), true);
        partial = partial.slice(nl + 1);
        nl = partial.indexOf('\n');
      }
      if (partial.length > MAX_STDERR_LINE_CHARS) {
        this.add(partial, true);
        partial = '';
      }
    };
    stream.on('data', (chunk: Buffer | string) =>
      flushLines(typeof chunk === 'string' ? chunk : decoder.write(chunk)),
    );
    stream.on('end', () => {
      flushLines(decoder.end());
      if (partial) this.add(partial, true);
      partial = '';
    });
    stream.on('error', () => {});
  }

  /**
   * Adds a line; `fromServer` lines also go to the logger. A line is kept redacted (a server
   * may echo secrets from its expanded arguments) and with its control characters shown, not
   * obeyed: it reaches terminals (`paddock servers logs`) and callers (UPSTREAM_ERROR messages).
   */
  add(raw: string, fromServer: boolean): void {
    const trimmed = neutralizeControls(redactText(raw.replace(/\r$/, ''), redactSecrets));
    if (!trimmed.trim()) return;
    const line =
      trimmed.length > MAX_STDERR_LINE_CHARS ? `${trimmed.slice(0, MAX_STDERR_LINE_CHARS)}…` : trimmed;
    this.lines.push(line);
    if (this.lines.length > this.maxLines) this.lines.splice(0, this.lines.length - this.maxLines);
    if (fromServer) this.onLine(line);
  }

  /** The last server line (not a marker), if any. */
  lastServerLine(): string | undefined {
    for (let i = this.lines.length - 1; i >= 0; i--) {
      const line = this.lines[i]!;
      if (!line.startsWith('[paddock] ')) return line;
    }
    return undefined;
  }

  snapshot(): string[] {
    return [...this.lines];
  }
}
