/**
 * The tracer that exports over OTLP/HTTP (binary protobuf to `<endpoint>/v1/traces`). Spans
 * are batched: sent when 512 have ended or a second after the first of a batch, and on close.
 * A collector that is down or slow never slows a call: a failed send is logged and dropped, and
 * at most 4,096 ended spans wait. Spans are remembered by key (invocation, run or job id) for
 * their children, the newest 20,000.
 */
import { randomFillSync } from 'node:crypto';
import type { Logger } from '../shared/logger.js';
import { type ExportMeta, encodeTraceRequest, type SpanRecord } from './otlp-encode.js';
import type {
  Attributes,
  AttributeValue,
  Span,
  SpanContext,
  SpanEnd,
  SpanKind,
  StartOptions,
  Tracer,
} from './types.js';

/** Options of {@link OtlpTracer}. */
export interface OtlpTracerOptions {
  /** The collector's OTLP/HTTP base URL (`/v1/traces` is added unless the path ends with it). */
  endpoint: string;
  headers?: Record<string, string>;
  /** Spans may carry tool inputs (redacted, cut); off by default. */
  includeInputs?: boolean;
  service: { name: string; version: string; instanceId: string };
  logger: Logger;
  maxBatch?: number;
  delayMs?: number;
  maxQueue?: number;
  timeoutMs?: number;
}

const MAX_KEYED = 20_000;

export class OtlpTracer implements Tracer {
  readonly enabled = true;
  readonly includeInputs: boolean;
  private readonly url: string;
  private readonly meta: ExportMeta;
  private queue: SpanRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Spans by key in two generations: when the newer fills, the older is dropped whole (O(1)). */
  private keyed = new Map<string, LiveSpan>();
  private older = new Map<string, LiveSpan>();
  private readonly sending = new Set<Promise<void>>();
  private readonly originNs = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();
  private dropped = 0;
  private readonly pool = Buffer.alloc(4096);
  private poolAt = 4096;
  private closed = false;

  constructor(private readonly options: OtlpTracerOptions) {
    this.includeInputs = options.includeInputs === true;
    const base = options.endpoint.replace(/\/+$/, '');
    this.url = base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
    this.meta = {
      resource: [
        ['service.name', options.service.name],
        ['service.version', options.service.version],
        ['service.instance.id', options.service.instanceId],
        ['telemetry.sdk.name', 'paddock'],
        ['telemetry.sdk.language', 'nodejs'],
      ],
      scope: { name: 'paddock', version: options.service.version },
    };
  }

  start(name: string, options: StartOptions = {}): Span {
    const keys = typeof options.parentKey === 'string' ? [options.parentKey] : (options.parentKey ?? []);
    let parent: SpanContext | undefined;
    for (const key of keys) {
      parent = key ? this.byKey(key)?.context : undefined;
      if (parent) break;
    }
    return this.open(name, options.kind ?? 'internal', options.attributes, parent, options.key);
  }

  spanOf(key: string): Span | undefined {
    return this.byKey(key);
  }

  endKey(key: string, outcome?: SpanEnd): void {
    this.byKey(key)?.end(outcome);
  }

  /** A new span; `parent` links it, `key` remembers it. */
  open(
    name: string,
    kind: SpanKind,
    attributes: Attributes | undefined,
    parent?: SpanContext,
    key?: string,
  ): LiveSpan {
    const context = { traceId: parent?.traceId ?? this.randomHex(16), spanId: this.randomHex(8) };
    const span = new LiveSpan(this, name, kind, context, parent?.spanId ?? null, this.now());
    if (attributes) span.setAttributes(attributes);
    if (key !== undefined) {
      this.keyed.set(key, span);
      if (this.keyed.size >= MAX_KEYED / 2) {
        this.older = this.keyed;
        this.keyed = new Map();
      }
    }
    return span;
  }

  private byKey(key: string): LiveSpan | undefined {
    return this.keyed.get(key) ?? this.older.get(key);
  }

  /** `bytes` random bytes as hex, from a pool refilled 4 KiB at a time. */
  private randomHex(bytes: number): string {
    if (this.poolAt + bytes > this.pool.length) {
      randomFillSync(this.pool);
      this.poolAt = 0;
    }
    const hex = this.pool.toString('hex', this.poolAt, this.poolAt + bytes);
    this.poolAt += bytes;
    return hex;
  }

  /** Wall-clock nanoseconds, monotonic within the process. */
  now(): bigint {
    return this.originNs + process.hrtime.bigint();
  }

  /** A span ended: queue it for the next batch. */
  finished(record: SpanRecord): void {
    if (this.closed) return;
    if (this.queue.length >= (this.options.maxQueue ?? 4096)) {
      this.queue.shift();
      this.dropped++;
    }
    this.queue.push(record);
    if (this.queue.length >= (this.options.maxBatch ?? 512)) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.options.delayMs ?? 1000);
      this.timer.unref();
    }
  }

  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch ?? 512);
      const send = this.send(batch);
      this.sending.add(send);
      void send.finally(() => this.sending.delete(send));
    }
    await Promise.all(this.sending);
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  private async send(batch: SpanRecord[]): Promise<void> {
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers: { ...this.options.headers, 'content-type': 'application/x-protobuf' },
        body: encodeTraceRequest(batch, this.meta),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (!res.ok) throw new Error(`the collector answered HTTP ${res.status}`);
      if (this.dropped > 0) {
        this.options.logger.warn('telemetry.dropped', { spans: this.dropped });
        this.dropped = 0;
      }
    } catch (e) {
      this.options.logger.warn('telemetry.export_failed', {
        url: this.url,
        spans: batch.length,
        error: (e as Error).message,
      });
    }
  }
}

/** A span of the OTLP tracer. */
class LiveSpan implements Span {
  private readonly attributes = new Map<string, AttributeValue>();
  private ended = false;

  constructor(
    private readonly tracer: OtlpTracer,
    private readonly name: string,
    private readonly kind: SpanKind,
    readonly context: SpanContext,
    private readonly parentSpanId: string | null,
    private readonly startNanos: bigint,
  ) {}

  setAttributes(attributes: Attributes): void {
    for (const [k, v] of Object.entries(attributes)) if (v !== undefined) this.attributes.set(k, v);
  }

  child(name: string, options: { kind?: SpanKind; attributes?: Attributes } = {}): Span {
    return this.tracer.open(name, options.kind ?? 'internal', options.attributes, this.context);
  }

  end(outcome: SpanEnd = {}): void {
    if (this.ended) return;
    this.ended = true;
    if (outcome.errorType) this.attributes.set('error.type', outcome.errorType);
    this.tracer.finished({
      traceId: this.context.traceId,
      spanId: this.context.spanId,
      parentSpanId: this.parentSpanId,
      name: this.name,
      kind: this.kind,
      startNanos: this.startNanos,
      endNanos: this.tracer.now(),
      attributes: [...this.attributes],
      status: outcome.errorType
        ? { code: 'error', ...(outcome.message ? { message: outcome.message } : {}) }
        : { code: 'unset' },
    });
  }
}
