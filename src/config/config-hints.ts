/**
 * Configuration problems in words a person reads: what was expected and what the file has, a
 * "did you mean" for a misspelt key or a value written in a short form that is not one
 * (`network: proxy` for `network: { mode: proxy }`), and that fix as YAML at its place in the
 * file. Reads the zod schema (its shapes and enums) and the parsed file; never guesses a value.
 */
import type { z } from 'zod';

type Segment = string | number;

/** The zod definition parts this module reads (zod v4 keeps them under `_zod.def`). */
interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  entries?: Record<string, string>;
  values?: unknown[];
  options?: z.ZodType[];
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The schema without default, optional, nullable and pipe wrappers. */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (let i = 0; i < 10; i++) {
    const def = defOf(s);
    const next = def.innerType ?? (def.type === 'pipe' ? def.in : undefined);
    if (!next) return s;
    s = next;
  }
  return s;
}

/** The schema at `path` below `root`, or null where the path leaves what the schema describes. */
export function schemaAt(root: z.ZodType, path: readonly Segment[]): z.ZodType | null {
  let s: z.ZodType | null = unwrap(root);
  for (const seg of path) {
    if (!s) return null;
    const def = defOf(s);
    if (def.type === 'object' && def.shape && typeof seg === 'string') s = def.shape[seg] ?? null;
    else if (def.type === 'array' && def.element) s = def.element;
    else if (def.type === 'record' && def.valueType) s = def.valueType;
    else return null;
    s = s ? unwrap(s) : null;
  }
  return s;
}

/** The keys an object schema takes, in declaration order. */
function keysOf(schema: z.ZodType | null): string[] {
  if (!schema) return [];
  const def = defOf(schema);
  return def.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

/** The values an enum or literal schema accepts (empty for other schemas). */
function choicesOf(schema: z.ZodType | null): string[] {
  if (!schema) return [];
  const def = defOf(schema);
  if (def.type === 'enum' && def.entries) return Object.values(def.entries).map(String);
  if (def.type === 'literal' && def.values) return def.values.map(String);
  return [];
}

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

/** The known key closest to `key`, when it is close enough to be a slip. */
function closest(key: string, known: string[]): string | null {
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  const slip = key.length < 3 ? 0 : Math.max(2, Math.floor(key.length / 3));
  return best !== null && bestDistance <= slip ? best : null;
}

/** The value at `path` in the parsed file. */
function valueAt(root: unknown, path: readonly Segment[]): unknown {
  let v = root;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[String(seg)];
  }
  return v;
}

/** How a person calls what the file holds. */
function described(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (typeof value === 'string')
    return `the text ${JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${value}`;
  if (Array.isArray(value)) return 'a list';
  return 'a mapping';
}

const KIND_WORDS: Record<string, string> = {
  object: 'a mapping (key: value lines)',
  array: 'a list',
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
};

/** `key: value` lines nested as the path is, with `line` at the end of it (the fix, in place). */
function yamlAt(path: readonly Segment[], line: string): string {
  const out: string[] = [];
  let indent = '';
  let item = false;
  for (const seg of path.slice(0, -1)) {
    if (typeof seg === 'number') {
      item = true;
      continue;
    }
    out.push(`${indent}${item ? '- ' : ''}${seg}:`);
    indent += item ? '    ' : '  ';
    item = false;
  }
  out.push(`${indent}${item ? '- ' : ''}${line}`);
  return out.join('\n');
}

/** One zod issue (v4 shape) as a person reads it, with a suggestion and the YAML to write when one applies. */
export function explainIssue(issue: z.core.$ZodIssue, schema: z.ZodType, raw: unknown): string {
  const path = issue.path.filter((p): p is Segment => typeof p !== 'symbol');
  const where = path.length > 0 ? path.join('.') : '(root)';
  const here = path.at(-1);
  if (issue.code === 'unrecognized_keys') {
    const known = keysOf(schemaAt(schema, path));
    return issue.keys
      .map((key) => {
        const guess = closest(key, known);
        if (guess) return `${where}: unknown key "${key}" — did you mean "${guess}"?`;
        return `${where}: unknown key "${key}"${known.length ? ` (known keys: ${known.join(', ')})` : ''}`;
      })
      .join('\n');
  }
  const value = valueAt(raw, path);
  // a schema's own message already speaks to the person: keep it
  if (!/^Invalid (input|option)/.test(issue.message)) return `${where}: ${issue.message}`;
  if (issue.code === 'invalid_type') {
    const expected = KIND_WORDS[issue.expected] ?? issue.expected;
    const line = `${where}: expected ${expected}, got ${described(value)}`;
    // a short form: the value is what one field of the expected mapping takes
    const target = schemaAt(schema, path);
    if (issue.expected === 'object' && typeof value === 'string' && target && typeof here === 'string') {
      for (const key of keysOf(target)) {
        if (!choicesOf(schemaAt(target, [key])).includes(value)) continue;
        const fix = `${here}: { ${key}: ${value} }`;
        return `${line} — did you mean \`${fix}\`?\n  write:\n${indentLines(yamlAt(path, fix), 4)}`;
      }
    }
    if (issue.expected === 'number' && typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value.trim())) {
      return `${line} — write it without quotes: ${String(here)}: ${value.trim()}`;
    }
    return line;
  }
  if (issue.code === 'invalid_value') {
    const choices = issue.values.map(String);
    const guess = typeof value === 'string' ? closest(value, choices) : null;
    return `${where}: ${described(value)} is not one of ${choices.join(', ')}${guess ? ` — did you mean "${guess}"?` : ''}`;
  }
  return `${where}: ${issue.message}`;
}

function indentLines(text: string, spaces: number): string {
  const pad = ' '.repeat(spaces);
  return text
    .split('\n')
    .map((l) => pad + l)
    .join('\n');
}
