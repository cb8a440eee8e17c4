/**
 * An OTLP/HTTP trace receiver for tests: a loopback HTTP server that takes POST /v1/traces and
 * decodes each body with the OpenTelemetry project's own .proto files (opentelemetry-proto,
 * vendored in test/fixtures/otlp-proto) through protobufjs.
 */
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { REPO_ROOT } from './paddock-process.js';

/** A received span, ids as hex and attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startNanos: bigint;
  endNanos: bigint;
  attributes: Record<string, unknown>;
  status: { code: number; message: string };
  resource: Record<string, unknown>;
  scope: string;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Raw request bodies. */
  bodies: Buffer[];
  /** Content types of the requests. */
  contentTypes: string[];
  close(): Promise<void>;
}

const PROTO_ROOT = join(REPO_ROOT, 'test', 'fixtures', 'otlp-proto');

function loadRequestType(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_ROOT, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: false });
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

type AnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};

function plain(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(plain);
  return undefined;
}

function attrs(list: { key: string; value?: AnyValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('hex');

/** Starts a receiver on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const Request = loadRequestType();
  const spans: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      bodies.push(body);
      contentTypes.push(String(req.headers['content-type']));
      const decoded = Request.toObject(Request.decode(body), { longs: String, defaults: true }) as {
        resourceSpans: {
          resource?: { attributes?: { key: string; value?: AnyValue }[] };
          scopeSpans: { scope?: { name: string }; spans: Record<string, unknown>[] }[];
        }[];
      };
      for (const rs of decoded.resourceSpans) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans as {
            traceId: Uint8Array;
            spanId: Uint8Array;
            parentSpanId: Uint8Array;
            name: string;
            kind: number;
            startTimeUnixNano: string;
            endTimeUnixNano: string;
            attributes: { key: string; value?: AnyValue }[];
            status?: { code: number; message: string };
          }[]) {
            spans.push({
              traceId: hex(s.traceId),
              spanId: hex(s.spanId),
              parentSpanId: hex(s.parentSpanId),
              name: s.name,
              kind: s.kind,
              startNanos: BigInt(s.startTimeUnixNano),
              endNanos: BigInt(s.endTimeUnixNano),
              attributes: attrs(s.attributes),
              status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
              resource,
              scope: ss.scope?.name ?? '',
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    spans,
    bodies,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
