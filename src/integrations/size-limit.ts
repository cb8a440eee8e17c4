/** A `fetch` as the MCP HTTP transports take it. */
export type FetchFn = (url: string | URL, init?: RequestInit) => Promise<Response>;

const LF_LF = Buffer.from('\n\n');
const CRLF_CRLF = Buffer.from('\r\n\r\n');

/**
 * Wraps `fetch` so that no single upstream message can exceed `maxBytes`: a JSON body is
 * counted whole; a `text/event-stream` body is counted per event (bytes since the last blank
 * line), so a long-lived notification stream is not cut off by its total. On overflow the
 * body stream fails and `onOverflow` runs (the pool then drops the connection and fails the
 * calls on it with a clear error) — the transport never buffers more than the cap.
 */
export function sizeLimitedFetch(
  maxBytes: number,
  onOverflow: (bytes: number) => void,
  base: FetchFn = fetch,
): FetchFn {
  return async (url, init) => {
    const response = await base(url, init);
    if (!response.body) return response;
    const perEvent = (response.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream');
    let count = 0;
    let tailLf = false;
    const limiter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (perEvent) {
          const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
          const boundary = Math.max(
            lastEnd(buf, LF_LF),
            lastEnd(buf, CRLF_CRLF),
            tailLf && buf[0] === 0x0a ? 1 : -1,
          );
          count = boundary >= 0 ? buf.length - boundary : count + buf.length;
          tailLf = buf.length > 0 && buf[buf.length - 1] === 0x0a;
        } else {
          count += chunk.byteLength;
        }
        if (count > maxBytes) {
          onOverflow(count);
          controller.error(new Error(`upstream message exceeded ${maxBytes} bytes`));
          return;
        }
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(limiter), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** Index just past the last occurrence of `needle` in `buf`, or -1. */
function lastEnd(buf: Buffer, needle: Buffer): number {
  const i = buf.lastIndexOf(needle);
  return i === -1 ? -1 : i + needle.length;
}
