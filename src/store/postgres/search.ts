/**
 * Full-text search of memories on PostgreSQL, made to behave like the SQLite FTS5 index
 * (`unicode61 remove_diacritics`): words are runs of letters and digits, folded to lower case,
 * Latin letters without their diacritics. The store builds the tsvector and tsquery values here, as literals, so
 * PostgreSQL's text parser (which keeps e-mail addresses, URLs and hyphenated words whole) and
 * the server's locale never change what matches.
 */
import { MAX_QUERY_TERMS } from '../sqlite/fts-query.js';

/** A character that starts or continues a word (FTS5 unicode61 keeps letters and digits). */
const WORD = /[\p{L}\p{N}]+/gu;
/** PostgreSQL refuses longer lexemes; such a run of letters is never a word anyone searches. */
const MAX_LEXEME_BYTES = 2046;
/** PostgreSQL keeps positions up to this value (larger ones are stored as it). */
const MAX_POSITION = 16_383;
/** PostgreSQL keeps at most this many positions of one lexeme. */
const MAX_POSITIONS_PER_LEXEME = 256;
/** Positions skipped between the content and the tags, so no phrase spans both. */
const TAG_GAP = 8;

/** The words of `text` as the index sees them: lower case, diacritics removed. */
export function words(text: string): string[] {
  // like remove_diacritics, only Latin letters lose their marks (kana keep their voicing marks)
  const folded = text
    .normalize('NFD')
    .replace(/(\p{Script=Latin})\p{M}+/gu, '$1')
    .normalize('NFC')
    .toLowerCase();
  return (folded.match(WORD) ?? []).filter((w) => Buffer.byteLength(w) <= MAX_LEXEME_BYTES);
}

/**
 * The tsvector literal of a memory: content words with weight B, tag words with weight A
 * (ranking counts a word in a tag twice a word in the content), each with its positions.
 */
export function memoryVector(content: string, tags: readonly string[]): string {
  const positions = new Map<string, string[]>();
  let at = 0;
  const add = (text: string, weight: 'A' | 'B') => {
    for (const w of words(text)) {
      at = Math.min(at + 1, MAX_POSITION);
      const list = positions.get(w) ?? [];
      if (list.length < MAX_POSITIONS_PER_LEXEME) list.push(`${at}${weight}`);
      positions.set(w, list);
    }
  };
  add(content, 'B');
  for (const tag of tags) {
    at = Math.min(at + TAG_GAP, MAX_POSITION);
    add(tag, 'A');
  }
  return [...positions].map(([w, list]) => `'${w}':${list.join(',')}`).join(' ');
}

/**
 * Turns free text into a tsquery literal with the rules of the SQLite `toFtsQuery`: every
 * whitespace-separated word is searched as itself (a word of several parts, such as
 * `deploy-prod`, as a phrase of them), operators in the text are plain text, the words are
 * joined with OR so notes matching more of them rank higher, and a trailing `*` keeps its
 * prefix meaning (`deploy*` matches `deployment`). At most MAX_QUERY_TERMS words count.
 * `undefined` means nothing searchable is left (treat it as an empty query).
 */
export function toTsQuery(text: string): string | undefined {
  const terms: string[] = [];
  for (const word of text.split(/\s+/u)) {
    if (terms.length >= MAX_QUERY_TERMS) break;
    const prefix = word.length > 1 && word.endsWith('*');
    const parts = words(prefix ? word.replace(/\*+$/u, '') : word);
    if (parts.length === 0) continue;
    const lexemes = parts.map((p, i) => `'${p}'${prefix && i === parts.length - 1 ? ':*' : ''}`);
    terms.push(lexemes.length === 1 ? (lexemes[0] as string) : `(${lexemes.join(' <-> ')})`);
  }
  return terms.length > 0 ? terms.join(' | ') : undefined;
}
