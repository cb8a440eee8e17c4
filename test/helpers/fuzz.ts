/**
 * Seeded mutation for fuzz tests: the same seed gives the same inputs on every machine, so a
 * failure printed with its seed replays exactly.
 */

/** mulberry32: a small seeded generator, the same sequence for the same seed everywhere. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Flips, inserts, deletes and duplicates bytes of `input`. */
export function mutate(input: Buffer, rnd: () => number): Buffer {
  const bytes = [...input];
  const edits = 1 + Math.floor(rnd() * 4);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(rnd() * (bytes.length + 1));
    const op = Math.floor(rnd() * 4);
    if (op === 0 && bytes.length > 0) bytes[at % bytes.length] = Math.floor(rnd() * 256);
    else if (op === 1) bytes.splice(at, 0, Math.floor(rnd() * 256));
    else if (op === 2) bytes.splice(at, 1 + Math.floor(rnd() * 8));
    else bytes.splice(at, 0, ...bytes.slice(at, at + Math.floor(rnd() * 16)));
  }
  return Buffer.from(bytes);
}

/** Values that break careless code: wrong types, extremes, prototype keys, text that is not text. */
function oddValue(rnd: () => number, depth = 0): unknown {
  const pick = Math.floor(rnd() * 16);
  switch (pick) {
    case 0:
      return null;
    case 1:
      return -1;
    case 2:
      return 1e308 * 10; // JSON.stringify writes null
    case 3:
      return Number.MAX_SAFE_INTEGER + 2;
    case 4:
      return '';
    case 5:
      return '\ud800lone surrogate';
    case 6:
      return 'x'.repeat(1 + Math.floor(rnd() * 70_000));
    case 7:
      return depth > 3 ? [] : [oddValue(rnd, depth + 1), oddValue(rnd, depth + 1)];
    case 8:
      return JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}');
    case 9:
      return true;
    case 10:
      return '../../../../etc/passwd';
    case 11:
      return '\u001b]52;c;ZXZpbA==\u0007\u001b[2J';
    case 12:
      return { $ref: '#', nested: depth > 3 ? {} : oddValue(rnd, depth + 1) };
    case 13:
      return '\ufffe\uffff';
    case 14:
      return 3.5;
    default:
      return Array.from({ length: 200 }, (_, i) => i);
  }
}

/** Replaces, removes or adds one field somewhere in a parsed JSON value (returns a new value). */
export function mutateValue(value: unknown, rnd: () => number, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > 6) return oddValue(rnd, depth);
  if (Array.isArray(value)) {
    const copy = [...value];
    if (copy.length === 0 || rnd() < 0.3) copy.push(oddValue(rnd, depth));
    else {
      const i = Math.floor(rnd() * copy.length);
      copy[i] = mutateValue(copy[i], rnd, depth + 1);
    }
    return copy;
  }
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  const keys = Object.keys(copy);
  const op = rnd();
  if (keys.length === 0 || op < 0.15) copy[rnd() < 0.5 ? 'extra' : '__proto__'] = oddValue(rnd, depth);
  else {
    const key = keys[Math.floor(rnd() * keys.length)]!;
    if (op < 0.3) delete copy[key];
    else copy[key] = rnd() < 0.5 ? mutateValue(copy[key], rnd, depth + 1) : oddValue(rnd, depth);
  }
  return copy;
}

/** Deeply nested JSON text, for parsers that recurse. */
export function deepNesting(levels: number): string {
  return `${'['.repeat(levels)}${']'.repeat(levels)}`;
}
