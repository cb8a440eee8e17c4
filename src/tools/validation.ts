import type { Ajv as AjvInstance, ErrorObject, ValidateFunction } from 'ajv';
import { PaddockError } from '../shared/errors.js';
import { requireCjs } from '../shared/require-cjs.js';
import type { JsonSchema } from './tool.js';

const { Ajv } = requireCjs('ajv') as typeof import('ajv');
// ajv-formats ships CommonJS with a default export object
const addFormats = (requireCjs('ajv-formats') as { default: (ajv: AjvInstance) => AjvInstance }).default;

function newAjv(codePoints: boolean): AjvInstance {
  const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: false, validateSchema: false });
  // Ajv still honours `unicode: false` (lengths from `length`) but warns about the option
  // whenever it is passed to the constructor; set after construction, it compiles silently.
  if (!codePoints) ajv.opts.unicode = false;
  return addFormats(ajv);
}

/**
 * Compiles tool input schemas once and validates inputs against them. String lengths count
 * characters (code points), as JSON Schema says. Counting code points walks every string, so an
 * input without a surrogate pair (characters and UTF-16 units then count the same) is checked
 * against a compilation that reads `length`; a compilation that counts code points is made for
 * the first input that has a pair.
 */
export class InputValidator {
  private readonly ajv = newAjv(false);
  private readonly cache = new WeakMap<JsonSchema, ValidateFunction>();
  private codePoints: { ajv: AjvInstance; cache: WeakMap<JsonSchema, ValidateFunction> } | undefined;

  /** Compiles a schema now (at registration) so a broken schema fails the load, not the call. */
  compile(schema: JsonSchema, toolName: string): ValidateFunction {
    return compileWith(this.ajv, this.cache, schema, toolName);
  }

  /** The schema compiled to count string lengths in code points. */
  private compileCodePoints(schema: JsonSchema, toolName: string): ValidateFunction {
    this.codePoints ??= { ajv: newAjv(true), cache: new WeakMap() };
    return compileWith(this.codePoints.ajv, this.codePoints.cache, schema, toolName);
  }

  /**
   * Throws INVALID_ARGUMENT listing every problem as `path: message`. Before the schema, every
   * string and property name must be text: no lone UTF-16 surrogate (a JSON `\ud800` escape)
   * and no Unicode non-character, whatever the tool.
   */
  validate(schema: JsonSchema, input: unknown, toolName: string): void {
    const scan: TextScan = { problems: [], pairs: false };
    scanText(input, '', scan);
    const notText = scan.problems;
    if (notText.length > 0) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `Invalid arguments for ${toolName}: ${notText.join('; ')}. Send well-formed Unicode text (no lone surrogates or non-characters).`,
        { problems: notText },
      );
    }
    const fn = scan.pairs ? this.compileCodePoints(schema, toolName) : this.compile(schema, toolName);
    if (fn(input)) return;
    const problems = (fn.errors ?? []).map(describe);
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `Invalid arguments for ${toolName}: ${problems.join('; ')}. Fix the arguments to match the tool's input schema.`,
      { problems },
    );
  }
}

/** Lone surrogates, and the non-characters U+FDD0–U+FDEF and U+xFFFE / U+xFFFF of every plane. */
const NOT_TEXT =
  /\p{Surrogate}|[\uFDD0-\uFDEF\uFFFE\uFFFF]|[\u{1FFFE}\u{1FFFF}\u{2FFFE}\u{2FFFF}\u{3FFFE}\u{3FFFF}\u{4FFFE}\u{4FFFF}\u{5FFFE}\u{5FFFF}\u{6FFFE}\u{6FFFF}\u{7FFFE}\u{7FFFF}\u{8FFFE}\u{8FFFF}\u{9FFFE}\u{9FFFF}\u{AFFFE}\u{AFFFF}\u{BFFFE}\u{BFFFF}\u{CFFFE}\u{CFFFF}\u{DFFFE}\u{DFFFF}\u{EFFFE}\u{EFFFF}\u{FFFFE}\u{FFFFF}\u{10FFFE}\u{10FFFF}]/u;

/** Any UTF-16 surrogate; once lone ones are refused, the start or end of a pair. */
const SURROGATE = /[\uD800-\uDFFF]/;

/** At most this many not-text problems are listed. */
const MAX_NOT_TEXT_PROBLEMS = 8;

/** What a walk over an input found: its not-text problems, and whether it has a surrogate pair. */
interface TextScan {
  problems: string[];
  pairs: boolean;
}

function scanText(value: unknown, path: string, scan: TextScan, depth = 0): void {
  if (scan.problems.length >= MAX_NOT_TEXT_PROBLEMS) return;
  if (depth > 64) {
    // not walked further: count lengths the exact way
    scan.pairs = true;
    return;
  }
  const at = path || '(arguments)';
  if (typeof value === 'string') {
    const m = NOT_TEXT.exec(value);
    if (m) scan.problems.push(`${at}: ${kindOf(m[0])} at index ${m.index}`);
    else if (!scan.pairs && SURROGATE.test(value)) scan.pairs = true;
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) scanText(v, path ? `${path}.${i}` : String(i), scan, depth + 1);
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    const m = NOT_TEXT.exec(key);
    if (m) {
      scan.problems.push(`${at}: a property name holds ${kindOf(m[0])} at index ${m.index}`);
      continue;
    }
    if (!scan.pairs && SURROGATE.test(key)) scan.pairs = true;
    scanText(v, path ? `${path}.${key}` : key, scan, depth + 1);
  }
}

function compileWith(
  ajv: AjvInstance,
  cache: WeakMap<JsonSchema, ValidateFunction>,
  schema: JsonSchema,
  toolName: string,
): ValidateFunction {
  const cached = cache.get(schema);
  if (cached) return cached;
  try {
    const fn = ajv.compile(schema);
    cache.set(schema, fn);
    return fn;
  } catch (e) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The input schema of tool "${toolName}" is not a valid JSON Schema (${(e as Error).message}); fix or remove the tool.`,
    );
  }
}

function kindOf(match: string): string {
  const code = match.codePointAt(0) ?? 0;
  const hex = code.toString(16).toUpperCase().padStart(4, '0');
  return code >= 0xd800 && code <= 0xdfff
    ? `a lone UTF-16 surrogate (U+${hex})`
    : `the non-character U+${hex}`;
}

function describe(e: ErrorObject): string {
  const path = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : '(arguments)';
  if (e.keyword === 'additionalProperties') {
    return `${path}: unknown property "${String((e.params as { additionalProperty: string }).additionalProperty)}"`;
  }
  if (e.keyword === 'enum') {
    return `${path}: must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
  }
  return `${path}: ${e.message ?? 'is invalid'}`;
}
