import type { Readable } from 'node:stream';
import {
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { McpServerConfig } from './load-config.js';
import { sizeLimitedFetch } from './size-limit.js';
import type { StderrLog } from './stderr-log.js';

/** A transport to one upstream server and what Paddock needs to know about it. */
export interface UpstreamTransport {
  transport: Transport;
  /** The server's process id (stdio, once started), else null. */
  pid(): number | null;
  /** Ends an HTTP session politely (DELETE); a no-op for stdio and SSE. */
  terminate(): Promise<void>;
}

export interface TransportOptions {
  /** No single message from the server may be larger (stdio read buffer; HTTP body / SSE event). */
  maxResultBytes: number;
  /** Called when an HTTP message went over the cap (stdio reports it as a transport error). */
  onOverflow(bytes: number): void;
  stderr: StderrLog;
}

/**
 * Builds the SDK transport for a server: stdio with stderr piped into `stderr` and the read
 * buffer capped at `maxResultBytes`; Streamable HTTP or legacy SSE with the configured headers
 * and a fetch that caps each message at `maxResultBytes`.
 */
export function createTransport(config: McpServerConfig, options: TransportOptions): UpstreamTransport {
  if (config.transport === 'stdio') {
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: 'pipe',
      maxBufferSize: options.maxResultBytes,
    });
    const stream = transport.stderr;
    if (stream) options.stderr.follow(stream as Readable);
    return { transport, pid: () => transport.pid, terminate: async () => {} };
  }
  const url = new URL(config.url);
  const fetch = sizeLimitedFetch(options.maxResultBytes, options.onOverflow);
  const requestInit: RequestInit = { headers: config.headers };
  if (config.transport === 'sse') {
    const transport = new SSEClientTransport(url, { requestInit, fetch });
    return { transport, pid: () => null, terminate: async () => {} };
  }
  const transport = new StreamableHTTPClientTransport(url, { requestInit, fetch });
  return {
    transport,
    pid: () => null,
    terminate: async () => {
      if (transport.sessionId) await transport.terminateSession();
    },
  };
}
