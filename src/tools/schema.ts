/**
 * Schema builders for tool inputs. Each builder writes its JSON Schema exactly as given — `type`
 * first, then the options in the order the caller wrote them, nothing added — so a tool's listing
 * stays byte for byte what it declares. At the type level each schema carries the TypeScript type
 * of the values it accepts, so `execute` receives its input typed, without casts after validation.
 *
 * @example
 * const input = s.object(
 *   { path: s.string({ maxLength: 1024 }), limit: s.integer({ minimum: 1 }) },
 *   { required: ['path'], additionalProperties: false },
 * );
 * // Infer<typeof input> is { path: string; limit?: number }
 */
/** A JSON Schema object (draft 2020-12 / draft-07 subset that MCP uses). */
export type JsonSchema = Record<string, unknown>;

/** Type-only brand: never present at run time, so it never reaches JSON. */
declare const VALUE: unique symbol;

/** A JSON Schema that accepts values of type `T`. */
export type Schema<T> = JsonSchema & { readonly [VALUE]?: T };

/** The type of the values a schema accepts (`unknown` for a schema without a type). */
export type Infer<S> = S extends { readonly [VALUE]?: infer T } ? (unknown extends T ? unknown : T) : unknown;

/** The properties of an object schema. */
export type Properties = Record<string, JsonSchema>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** The object type of `properties` with the keys `R` required and the others optional. */
export type ObjectOf<P extends Properties, R extends keyof P> = Simplify<
  { -readonly [K in R]: Infer<P[K]> } & { -readonly [K in Exclude<keyof P, R>]?: Infer<P[K]> }
>;

/** Keywords every builder accepts. */
export interface Common {
  description?: string;
  title?: string;
}

export interface StringOptions extends Common {
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  default?: string;
}

export interface NumberOptions extends Common {
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  default?: number;
}

export interface BooleanOptions extends Common {
  default?: boolean;
}

export interface EnumOptions<V> extends Common {
  default?: V;
}

export interface ArrayOptions<S extends JsonSchema> extends Common {
  /** The schema of every item; written where it stands among the options. */
  items: S;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
}

export interface ObjectOptions<R> extends Common {
  /** Names of the required properties (typed as present in the input). */
  required?: R;
  /** `false` closes the object to unknown properties. */
  additionalProperties?: boolean;
}

export interface RecordOptions extends Common {
  minProperties?: number;
  maxProperties?: number;
}

/** The schema builders. */
export const s = {
  /** `{ type: 'string', ...options }` */
  string(options?: StringOptions): Schema<string> {
    return { type: 'string', ...options };
  },
  /** `{ type: 'integer', ...options }` */
  integer(options?: NumberOptions): Schema<number> {
    return { type: 'integer', ...options };
  },
  /** `{ type: 'number', ...options }` */
  number(options?: NumberOptions): Schema<number> {
    return { type: 'number', ...options };
  },
  /** `{ type: 'boolean', ...options }` */
  boolean(options?: BooleanOptions): Schema<boolean> {
    return { type: 'boolean', ...options };
  },
  /** `{ type: 'string', enum: values, ...options }`: one of the given strings. */
  enum<const V extends readonly string[]>(values: V, options?: EnumOptions<V[number]>): Schema<V[number]> {
    return { type: 'string', enum: values, ...options };
  },
  /** `{ type: 'array', ...options }`, `items` among the options. */
  array<S extends JsonSchema>(options: ArrayOptions<S>): Schema<Infer<S>[]> {
    return { type: 'array', ...options };
  },
  /** `{ type: 'object', properties, ...options }` */
  object<P extends Properties, const R extends readonly (keyof P & string)[] = readonly []>(
    properties: P,
    options?: ObjectOptions<R>,
  ): Schema<ObjectOf<P, R[number]>> {
    return { type: 'object', properties, ...options };
  },
  /** `{ type: 'object', ...options, additionalProperties: values }`: any keys, values of one schema. */
  record<S extends JsonSchema>(values: S, options?: RecordOptions): Schema<Record<string, Infer<S>>> {
    return { type: 'object', ...options, additionalProperties: values };
  },
  /** A JSON Schema written elsewhere (an upstream server's, a plugin's), passed through as the same object. */
  json<T = unknown>(schema: JsonSchema): Schema<T> {
    return schema;
  },
};
