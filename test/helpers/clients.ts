import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { PADDOCK_BIN, type TempProject } from './paddock-process.js';

/** A stdio transport to `paddock mcp` in a project (`extraArgs`, e.g. `--computer NAME`). */
export function stdioTransport(project: TempProject, extraArgs: string[] = []): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: [PADDOCK_BIN, 'mcp', ...extraArgs],
    cwd: project.dir,
    env: project.env as Record<string, string>,
    stderr: 'ignore',
  });
}

/**
 * Which protocol era a test client speaks: the 2025 handshake (`legacy`, the SDK's default),
 * the `server/discover` probe with fallback (`auto`), or 2026-07-28 only (`modern`).
 */
export type Negotiation = 'legacy' | 'auto' | 'modern';

/** The client options for an era (and extra capabilities). */
export function clientOptions(negotiation: Negotiation = 'legacy', capabilities?: Record<string, unknown>) {
  return {
    ...(negotiation === 'legacy'
      ? {}
      : {
          versionNegotiation: {
            mode: negotiation === 'auto' ? ('auto' as const) : { pin: '2026-07-28' as const },
          },
        }),
    ...(capabilities ? { capabilities } : {}),
  };
}

/** The official MCP client connected to `paddock mcp` (stdio) in a project. */
export async function connectStdio(
  project: TempProject,
  name = 'paddock-test',
  extraArgs: string[] = [],
  negotiation: Negotiation = 'legacy',
): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' }, clientOptions(negotiation));
  await client.connect(stdioTransport(project, extraArgs));
  return client;
}

/** The official MCP client connected to a running `paddock serve` over Streamable HTTP. */
export async function connectHttp(
  url: string,
  token: string,
  name = 'paddock-test',
  options: { computer?: string; negotiation?: Negotiation; capabilities?: Record<string, unknown> } = {},
): Promise<Client> {
  const client = new Client(
    { name, version: '1.0.0' },
    clientOptions(options.negotiation, options.capabilities) as never,
  );
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  // a named computer, shared by every session naming it (else the session's own)
  if (options.computer) headers['paddock-computer'] = options.computer;
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

/** Debian's chromium, never a downloaded browser; flags for a closed network and root. */
export const CHROMIUM = {
  executablePath: '/usr/bin/chromium',
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-quic',
    '--no-first-run',
    '--disable-component-update',
    '--disable-sync',
  ],
};

/**
 * Calls tool `name` and returns its structured result (or its text parsed as JSON when it answers
 * with text only); fails the test when the call is an error.
 */
export async function callOk(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const r = await client.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
  if (r.structuredContent) return r.structuredContent as Record<string, unknown>;
  // a tool that answers with text only (read_file of a text file): its text as JSON
  return JSON.parse((r.content as { text: string }[])[0]!.text) as Record<string, unknown>;
}
