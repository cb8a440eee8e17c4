/** Terms beyond this count are ignored (a pasted paragraph must not build a huge query). */
export const MAX_QUERY_TERMS = 32;

/** A character that the FTS5 `unicode61` tokenizer keeps inside a token. */
const WORD_CHAR = /[\p{L}\p{N}]/u;

/**
 * Turns free text into an FTS5 MATCH expression that cannot fail to parse and carries no
 * operators from the user: every whitespace-separated word becomes a quoted string (inner
 * `"` doubled), so `AND`, `NEAR`, `-`, `:`, `(`, `^` and `*` are plain text. Words are joined
 * with OR, letting bm25 rank notes that match more words higher. A trailing `*` on a word
 * keeps its prefix meaning (`deploy*` matches `deployment`). Words without a letter or digit
 * are dropped; `undefined` means nothing searchable is left (treat it as an empty query).
 */
export function toFtsQuery(text: string): string | undefined {
  const terms: string[] = [];
  for (const word of text.split(/\s+/u)) {
    if (terms.length >= MAX_QUERY_TERMS) break;
    const prefix = word.length > 1 && word.endsWith('*');
    const body = prefix ? word.replace(/\*+$/u, '') : word;
    if (!WORD_CHAR.test(body)) continue;
    terms.push(`"${body.replaceAll('"', '""')}"${prefix ? '*' : ''}`);
  }
  return terms.length > 0 ? terms.join(' OR ') : undefined;
}
