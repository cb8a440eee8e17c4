/**
 * OTLP/HTTP in binary protobuf, written by hand for the few messages a trace export needs
 * (opentelemetry/proto/collector/trace/v1 ExportTraceServiceRequest and what it holds), so
 * Paddock carries no protobuf runtime. Field numbers follow the .proto files of the
 * OpenTelemetry project.
 */
import type { AttributeValue, SpanKind } from './types.js';

/** One finished span as it is exported. */
export interface SpanRecord {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: SpanKind;
  startNanos: bigint;
  endNanos: bigint;
  attributes: [string, AttributeValue][];
  status: { code: 'unset' | 'ok' | 'error'; message?: string };
}

/** What the export says about the process (resource) and the instrumentation (scope). */
export interface ExportMeta {
  resource: [string, AttributeValue][];
  scope: { name: string; version: string };
}

const KIND = { internal: 1, server: 2, client: 3 } as const;
const STATUS = { unset: 0, ok: 1, error: 2 } as const;

/** A growable byte buffer with the protobuf wire primitives. */
class Writer {
  private buf: Buffer;
  private len = 0;

  constructor(size = 64) {
    this.buf = Buffer.allocUnsafe(size);
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  varint(value: number | bigint): void {
    this.ensure(10);
    if (typeof value === 'number' && value >= 0 && value <= 0x7fffffff) {
      let n = value;
      while (n > 0x7f) {
        this.buf[this.len++] = (n & 0x7f) | 0x80;
        n >>>= 7;
      }
      this.buf[this.len++] = n;
      return;
    }
    let v = BigInt.asUintN(64, BigInt(value));
    while (v > 0x7fn) {
      this.buf[this.len++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.len++] = Number(v);
  }

  tag(field: number, wire: 0 | 1 | 2 | 5): void {
    this.varint((field << 3) | wire);
  }

  bytes(field: number, data: Uint8Array): void {
    this.tag(field, 2);
    this.varint(data.length);
    this.ensure(data.length);
    this.buf.set(data, this.len);
    this.len += data.length;
  }

  string(field: number, text: string): void {
    const n = Buffer.byteLength(text, 'utf8');
    this.tag(field, 2);
    this.varint(n);
    this.ensure(n);
    this.len += this.buf.write(text, this.len, n, 'utf8');
  }

  fixed64(field: number, value: bigint): void {
    this.tag(field, 1);
    this.ensure(8);
    this.buf.writeBigUInt64LE(value, this.len);
    this.len += 8;
  }

  double(field: number, value: number): void {
    this.tag(field, 1);
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.len);
    this.len += 8;
  }

  /** A nested message written by `write`: its length is filled in afterwards (at most 2^28 bytes). */
  message(field: number, write: (w: Writer) => void): void {
    this.tag(field, 2);
    // four bytes reserved for the length, written as a padded varint so nothing moves
    this.ensure(4);
    const at = this.len;
    this.len += 4;
    write(this);
    const n = this.len - at - 4;
    this.buf[at] = (n & 0x7f) | 0x80;
    this.buf[at + 1] = ((n >>> 7) & 0x7f) | 0x80;
    this.buf[at + 2] = ((n >>> 14) & 0x7f) | 0x80;
    this.buf[at + 3] = (n >>> 21) & 0x7f;
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}

/** AnyValue (common.proto): string 1, bool 2, int 3, double 4, array 5. */
function anyValue(w: Writer, value: AttributeValue): void {
  if (typeof value === 'string') w.string(1, value);
  else if (typeof value === 'boolean') {
    w.tag(2, 0);
    w.varint(value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) {
      w.tag(3, 0);
      w.varint(BigInt(value));
    } else w.double(4, value);
  } else {
    // ArrayValue { repeated AnyValue values = 1; }
    w.message(5, (arr) => {
      for (const v of value) arr.message(1, (item) => anyValue(item, v));
    });
  }
}

/** KeyValue (common.proto): key 1, value 2. */
function keyValues(w: Writer, field: number, attributes: [string, AttributeValue][]): void {
  for (const [key, value] of attributes) {
    w.message(field, (kv) => {
      kv.string(1, key);
      kv.message(2, (v) => anyValue(v, value));
    });
  }
}

/** Span (trace.proto). */
function span(w: Writer, s: SpanRecord): void {
  w.bytes(1, Buffer.from(s.traceId, 'hex'));
  w.bytes(2, Buffer.from(s.spanId, 'hex'));
  if (s.parentSpanId) w.bytes(4, Buffer.from(s.parentSpanId, 'hex'));
  w.string(5, s.name);
  w.tag(6, 0);
  w.varint(KIND[s.kind]);
  w.fixed64(7, s.startNanos);
  w.fixed64(8, s.endNanos);
  keyValues(w, 9, s.attributes);
  // Status: message 2, code 3
  w.message(15, (st) => {
    if (s.status.message) st.string(2, s.status.message);
    if (s.status.code !== 'unset') {
      st.tag(3, 0);
      st.varint(STATUS[s.status.code]);
    }
  });
}

/** ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; } with one resource and scope. */
export function encodeTraceRequest(spans: readonly SpanRecord[], meta: ExportMeta): Buffer {
  const w = new Writer(512 * Math.max(1, spans.length));
  w.message(1, (rs) => {
    rs.message(1, (resource) => keyValues(resource, 1, meta.resource));
    rs.message(2, (ss) => {
      ss.message(1, (scope) => {
        scope.string(1, meta.scope.name);
        scope.string(2, meta.scope.version);
      });
      for (const s of spans) ss.message(2, (m) => span(m, s));
    });
  });
  return w.finish();
}
