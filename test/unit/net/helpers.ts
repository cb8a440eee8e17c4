import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import type { HostResolver, Sandbox } from '../../../src/policy/types.js';

/** A request as a test server saw it. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** An HTTP server on 127.0.0.1 started by a test. */
export interface LocalServer {
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** Starts a server on an ephemeral port of 127.0.0.1; it records every request with its body. */
export async function startServer(handler: Handler): Promise<LocalServer> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  // a client that stops reading makes writes fail; that is expected in these tests
  server.on('clientError', (_e, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A HostResolver with fixed answers; it counts lookups and fails unknown names like DNS does. */
export function staticResolver(answers: Record<string, string[] | (() => string[])>): HostResolver & {
  calls: string[];
} {
  const calls: string[] = [];
  return {
    calls,
    async lookup(hostname) {
      calls.push(hostname);
      const answer = answers[hostname];
      if (answer === undefined) {
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      }
      return typeof answer === 'function' ? answer() : answer;
    },
  };
}

/** The real WhitelistSandbox with the given http rules. */
export function httpPolicy(allow: string[], deny: string[] = []): Sandbox {
  return createWhitelistSandbox(policySchema.parse({ http: { allow, deny } }));
}
