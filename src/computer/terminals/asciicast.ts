/**
 * A terminal's session as an asciicast v2 file (the asciinema recording format): a JSON
 * header, then one `[seconds, code, data]` event a line — output (`o`) as it arrived, each
 * input (`i`) with a marker (`m`) naming who typed it, and resizes (`r`). Only the output the
 * terminal still keeps is in it; inputs are redacted like the journal shows them.
 */
import { leadingContinuationBytes } from '../../shared/text.js';
import type { OutputBuffer } from '../output-buffer.js';
import type { JournalEntry, TerminalJournal } from './journal.js';

/** What the export reads of a terminal. */
export interface CastSource {
  id: string;
  label: string;
  output: OutputBuffer;
  journal: TerminalJournal;
}

type Event = [number, 'o' | 'i' | 'm' | 'r', string];

/** The label of an input's marker: who typed, and where from. */
export function markerLabel(e: JournalEntry): string {
  const from = e.source === 'agent' ? 'agent' : e.source === 'person' ? 'person' : 'script';
  return `${from} (${e.who}) typed`;
}

/** The asciicast v2 text of `t` (ends with a newline). */
export function toAsciicast(t: CastSource): string {
  const { journal, output } = t;
  const marks = journal.outputTimes();
  const start = Math.min(journal.initial.at, marks[0]?.at ?? journal.initial.at);
  const seconds = (at: number) => Math.max(0, (at - start) / 1000);
  const events: { at: number; order: number; event: Event }[] = [];
  let order = 0;
  const add = (at: number, code: Event[1], data: string) => {
    events.push({ at, order: order++, event: [Number(seconds(at).toFixed(6)), code, data] });
  };

  // output, chunk by chunk between the times it arrived, decoded as one UTF-8 stream
  const decoder = new TextDecoder('utf-8');
  // retention may have cut a character: start after its continuation bytes
  const from =
    output.startOffset === 0
      ? 0
      : output.startOffset + leadingContinuationBytes(output.read(output.startOffset, 3).bytes);
  for (let i = 0; i < marks.length; i++) {
    const mark = marks[i]!;
    const end = Math.min(marks[i + 1]?.offset ?? output.endOffset, output.endOffset);
    const begin = Math.max(mark.offset, from);
    if (end <= begin) continue;
    const { bytes } = output.read(begin, end - begin);
    const text = decoder.decode(bytes, { stream: true });
    if (text) add(mark.at, 'o', text);
  }
  const rest = decoder.decode();
  if (rest) add(marks.at(-1)?.at ?? start, 'o', rest);

  for (const e of journal.list()) {
    if (e.kind === 'input') {
      add(e.at, 'm', markerLabel(e));
      add(e.at, 'i', e.text ?? '');
    } else if (e.kind === 'resize') add(e.at, 'r', `${e.cols}x${e.rows}`);
    else add(e.at, 'm', `${e.who} ${e.kind === 'hold' ? 'took control' : 'gave control back'}`);
  }
  events.sort((a, b) => a.at - b.at || a.order - b.order);
  const last = events.at(-1)?.at ?? start;
  const header = {
    version: 2,
    width: journal.initial.cols,
    height: journal.initial.rows,
    timestamp: Math.floor(start / 1000),
    duration: Number(seconds(last).toFixed(6)),
    title: `${t.label} (${t.id})`,
    env: { TERM: 'xterm-256color' },
  };
  return `${[JSON.stringify(header), ...events.map((e) => JSON.stringify(e.event))].join('\n')}\n`;
}
