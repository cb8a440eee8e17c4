import type { Ajv as AjvInstance, ErrorObject, ValidateFunction } from 'ajv';
import { PaddockError } from '../shared/errors.js';
import { requireCjs } from '../shared/require-cjs.js';
import type { JsonSchema } from './tool.js';

const { Ajv } = requireCjs('ajv') as typeof import('ajv');
// ajv-formats ships CommonJS with a default export object
const addFormats = (requireCjs('ajv-formats') as { default: (ajv: AjvInstance) => AjvInstance }).default;

/** Compiles tool input schemas once and validates inputs against them. */
export class InputValidator {
  private readonly ajv: AjvInstance;
  private readonly cache = new WeakMap<JsonSchema, ValidateFunction>();

  constructor() {
    this.ajv = new Ajv({ allErrors: true, strict: false, useDefaults: false, validateSchema: false });
    addFormats(this.ajv);
  }

  /** Compiles a schema now (at registration) so a broken schema fails the load, not the call. */
  compile(schema: JsonSchema, toolName: string): ValidateFunction {
    const cached = this.cache.get(schema);
    if (cached) return cached;
    try {
      const fn = this.ajv.compile(schema);
      this.cache.set(schema, fn);
      return fn;
    } catch (e) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `The input schema of tool "${toolName}" is not a valid JSON Schema (${(e as Error).message}); fix or remove the tool.`,
      );
    }
  }

  /**
   * Throws INVALID_ARGUMENT listing every problem as `path: message`. Before the schema, every
   * string and property name must be text: no lone UTF-16 surrogate (a JSON `\ud800` escape)
   * and no Unicode non-character, whatever the tool.
   */
  validate(schema: JsonSchema, input: unknown, toolName: string): void {
    const notText = notTextProblems(input, '', []);
    if (notText.length > 0) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `Invalid arguments for ${toolName}: ${notText.join('; ')}. Send well-formed Unicode text (no lone surrogates or non-characters).`,
        { problems: notText },
      );
    }
    const fn = this.compile(schema, toolName);
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

/** At most this many not-text problems are listed. */
const MAX_NOT_TEXT_PROBLEMS = 8;

function notTextProblems(value: unknown, path: string, out: string[], depth = 0): string[] {
  if (out.length >= MAX_NOT_TEXT_PROBLEMS || depth > 64) return out;
  const at = path || '(arguments)';
  if (typeof value === 'string') {
    const m = NOT_TEXT.exec(value);
    if (m) out.push(`${at}: ${kindOf(m[0])} at index ${m.index}`);
    return out;
  }
  if (value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries())
      notTextProblems(v, path ? `${path}.${i}` : String(i), out, depth + 1);
    return out;
  }
  for (const [key, v] of Object.entries(value)) {
    const m = NOT_TEXT.exec(key);
    if (m) {
      out.push(`${at}: a property name holds ${kindOf(m[0])} at index ${m.index}`);
      continue;
    }
    notTextProblems(v, path ? `${path}.${key}` : key, out, depth + 1);
  }
  return out;
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
