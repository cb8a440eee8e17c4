/**
 * Traces of calls: spans with OpenTelemetry's model (trace and span ids, parent, kind, times,
 * attributes, status) and a tracer that links them by the ids Paddock already has — an
 * invocation, an agent run, a job — so the lineage run → job → channel call → upstream call
 * becomes parent and child spans without passing contexts through every layer.
 */

/** OTLP span kinds. */
export type SpanKind = 'internal' | 'server' | 'client';

/** Attribute values OTLP carries (no arrays of mixed types). */
export type AttributeValue = string | number | boolean | string[];

export type Attributes = Record<string, AttributeValue | undefined>;

/** Where a span sits: ids as lower-case hex (32 and 16 digits). */
export interface SpanContext {
  traceId: string;
  spanId: string;
}

/** How a span ended: `errorType` (e.g. an error code) marks it failed. */
export interface SpanEnd {
  errorType?: string | null;
  message?: string | null;
}

/** A span being recorded. */
export interface Span {
  readonly context: SpanContext | null;
  setAttributes(attributes: Attributes): void;
  /** A child of this span. */
  child(name: string, options?: { kind?: SpanKind; attributes?: Attributes }): Span;
  /** Ends the span once (later calls do nothing). */
  end(outcome?: SpanEnd): void;
}

/** Options of {@link Tracer.start}. */
export interface StartOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /**
   * The key (invocation, run or job id) whose span is the parent — the first known of a list —
   * or a new trace when none is known.
   */
  parentKey?: string | readonly (string | null | undefined)[] | null;
  /** Registers this span under the key, so later spans can name it as their parent. */
  key?: string;
}

/** Starts spans and exports them when they end. */
export interface Tracer {
  /** False when tracing is off: spans cost nothing and go nowhere. */
  readonly enabled: boolean;
  /** Whether spans may carry tool inputs (off unless configured). */
  readonly includeInputs: boolean;
  start(name: string, options?: StartOptions): Span;
  /** The span registered under `key`, while it is remembered. */
  spanOf(key: string): Span | undefined;
  /** Ends the span registered under `key`, if any. */
  endKey(key: string, outcome?: SpanEnd): void;
  /** Sends every ended span now. */
  flush(): Promise<void>;
  /** Flushes and stops. */
  close(): Promise<void>;
}

const NOOP_SPAN: Span = {
  context: null,
  setAttributes: () => undefined,
  child: () => NOOP_SPAN,
  end: () => undefined,
};

/** The tracer when tracing is off. */
export const NOOP_TRACER: Tracer = {
  enabled: false,
  includeInputs: false,
  start: () => NOOP_SPAN,
  spanOf: () => undefined,
  endKey: () => undefined,
  flush: async () => undefined,
  close: async () => undefined,
};
