import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { PaddockError } from '../shared/errors.js';
import type { JsonSchema } from './tool.js';

// ajv-formats ships CommonJS with a default export object
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Compiles tool input schemas once and validates inputs against them. */
export class InputValidator {
  private readonly ajv: Ajv;
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

  /** Throws INVALID_ARGUMENT listing every problem as `path: message`. */
  validate(schema: JsonSchema, input: unknown, toolName: string): void {
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
