/**
 * A line diff of two tool definitions for a person's review: each definition pretty-printed
 * with sorted keys, compared line by line (longest common subsequence), unchanged runs cut to
 * a few lines of context.
 */

/** One line of a diff: unchanged (` `), removed (`-`) or added (`+`); `…` marks skipped lines. */
export interface DiffLine {
  op: ' ' | '-' | '+' | '…';
  text: string;
}

/** Lines of context kept around each change. */
const CONTEXT = 3;
/** Above this many lines per side, the diff shows both definitions whole instead (no LCS table). */
const MAX_LINES = 2000;

/** The definition (canonical JSON text, or null) pretty-printed, one member a line. */
export function prettyDefinition(text: string | null): string[] {
  if (text === null) return [];
  return JSON.stringify(JSON.parse(text), null, 2).split('\n');
}

/** The diff of a pinned and a listed definition (either may be null: a new or a removed tool). */
export function definitionDiff(before: string | null, after: string | null): DiffLine[] {
  const a = prettyDefinition(before);
  const b = prettyDefinition(after);
  if (a.length > MAX_LINES || b.length > MAX_LINES) {
    return [
      ...a.map((text) => ({ op: '-' as const, text })),
      ...b.map((text) => ({ op: '+' as const, text })),
    ];
  }
  // lengths of the longest common subsequence of a[i..] and b[j..]
  const lcs: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ op: ' ', text: a[i]! });
      i++;
      j++;
    } else if (i < a.length && (j >= b.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      lines.push({ op: '-', text: a[i]! });
      i++;
    } else {
      lines.push({ op: '+', text: b[j]! });
      j++;
    }
  }
  return withContext(lines);
}

/** Keeps changed lines and {@link CONTEXT} lines around them; longer unchanged runs become `…`. */
function withContext(lines: DiffLine[]): DiffLine[] {
  const keep = lines.map((l) => l.op !== ' ');
  const near = keep.map((_, k) => {
    for (let d = -CONTEXT; d <= CONTEXT; d++) if (keep[k + d]) return true;
    return false;
  });
  const out: DiffLine[] = [];
  let skipped = 0;
  lines.forEach((line, k) => {
    if (near[k]) {
      if (skipped > 0) out.push({ op: '…', text: `${skipped} unchanged line${skipped === 1 ? '' : 's'}` });
      skipped = 0;
      out.push(line);
    } else skipped++;
  });
  if (skipped > 0) out.push({ op: '…', text: `${skipped} unchanged line${skipped === 1 ? '' : 's'}` });
  return out;
}

/** The diff as text: `- `, `+ `, `  ` prefixes, `… N unchanged lines`. */
export function diffText(lines: readonly DiffLine[]): string {
  return lines.map((l) => (l.op === '…' ? `  … ${l.text}` : `${l.op} ${l.text}`)).join('\n');
}
