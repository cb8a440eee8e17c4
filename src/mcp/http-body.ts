/** The body of one `/mcp` POST: bounded in size and time, parsed as JSON; and JSON-RPC error answers. */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** What `readJson` resolves with when it already answered the request (too large, slow or not JSON). */
export const INVALID = Symbol('invalid');

/**
 * Reads a POST body of at most `maxBytes` within `timeoutMs` and parses it as JSON; answers the
 * request itself (413, 408, 400) and resolves with INVALID when it cannot.
 */
export function readJson(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  timeoutMs: number,
): Promise<unknown | typeof INVALID> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // a body that never ends: answer 408, then drop the connection (which ends the read below)
    const timer = setTimeout(() => {
      res.setHeader('connection', 'close');
      sendJsonRpcError(
        res,
        408,
        -32600,
        `The request body did not arrive within ${timeoutMs} ms; send the whole message at once.`,
      );
      res.once('finish', () => req.destroy());
    }, timeoutMs);
    const settle = (value: unknown) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onError);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      sendJsonRpcError(res, 413, -32600, `Request body over ${maxBytes} bytes; send smaller requests.`);
      settle(INVALID);
      req.destroy();
    };
    const onEnd = () => {
      if (res.headersSent) return settle(INVALID);
      try {
        const text =
          chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
        settle(JSON.parse(text));
      } catch {
        sendJsonRpcError(
          res,
          400,
          -32700,
          'The body is not valid JSON; send one JSON-RPC message or a batch.',
        );
        settle(INVALID);
      }
    };
    const onError = () => settle(INVALID);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onError);
  });
}

/** Answers with a JSON-RPC error body (with `data` when given) and the given HTTP status. */
export function sendJsonRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  data?: Record<string, unknown>,
): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message, ...(data ? { data } : {}) }, id: null }));
}
