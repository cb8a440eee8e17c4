import type { z } from 'zod';
import { requireCjs } from '../shared/require-cjs.js';

const { parseDocument } = requireCjs('yaml') as typeof import('yaml');

/** A markdown file split into its YAML frontmatter and body. */
export type Frontmatter =
  | { ok: true; data: Record<string, unknown>; body: string }
  | { ok: false; problems: string[] };

const OPEN = /^\uFEFF?---[ \t]*\r?\n/;
const CLOSE = /^(?:---|\.\.\.)[ \t]*$/m;

/**
 * Splits `---\n<yaml>\n---\n<body>`. The frontmatter must open the file and be a YAML map;
 * duplicate keys and YAML syntax errors are problems with their line and column.
 */
export function parseFrontmatter(text: string, kind: string): Frontmatter {
  const open = OPEN.exec(text);
  if (!open) {
    return {
      ok: false,
      problems: [
        `(file): ${kind} must start with a "---" line, then YAML frontmatter (name, description, …), then a "---" line and the markdown body`,
      ],
    };
  }
  const rest = text.slice(open[0].length);
  const close = CLOSE.exec(rest);
  if (!close) {
    return { ok: false, problems: ['(file): the frontmatter is not closed; add a "---" line after it'] };
  }
  const yamlText = rest.slice(0, close.index);
  const body = rest.slice(close.index + close[0].length).replace(/^\r?\n/, '');
  const doc = parseDocument(yamlText, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        // +1: the opening "---" is line 1 of the file
        const where = pos ? `line ${pos.line + 1}, column ${pos.col}` : '(frontmatter)';
        return `${where}: ${e.message.split('\n')[0]}; fix the YAML syntax`;
      }),
    };
  }
  const data: unknown = doc.toJS();
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return {
      ok: false,
      problems: ['(frontmatter): must be a YAML map of keys such as name and description'],
    };
  }
  return { ok: true, data: data as Record<string, unknown>, body: body.trim() };
}

/** Zod issues as `key: message` lines; unknown keys get a "did you mean" when one is close. */
export function describeIssues(error: z.ZodError, knownKeys: readonly string[]): string[] {
  const lines: string[] = [];
  for (const issue of error.issues) {
    const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(frontmatter)';
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const at = issue.path.length > 0 ? `${path}.${key}` : key;
        const near = issue.path.length === 0 ? closest(key, knownKeys) : undefined;
        lines.push(
          near
            ? `${at}: unknown key; did you mean "${near}"?`
            : `${at}: unknown key; remove it${issue.path.length === 0 ? ` (known keys: ${knownKeys.join(', ')})` : ''}`,
        );
      }
      continue;
    }
    lines.push(`${path}: ${issue.message}`);
  }
  return lines;
}

/** The known key nearest to `key` (case-insensitive, `-`/`_` ignored, edit distance ≤ 2). */
export function closest(key: string, known: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[-_]/g, '');
  let best: { key: string; d: number } | undefined;
  for (const k of known) {
    const d = distance(norm(key), norm(k));
    if (d <= 2 && (!best || d < best.d)) best = { key: k, d };
  }
  return best?.key;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}
