/**
 * 2026-07-28 requests of an OAuth client: bound by its principal, never by the owner's. Its
 * default computer is its own; a named computer its grant does not list is NOT_FOUND; its calls
 * are audited as the client; the owner's default computer stays the owner's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttp } from '../helpers/clients.js';
import { auditCallerOf, grantTokens, paddockClientId } from '../helpers/oauth.js';
import { type ServeProcess, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

type Structured = Record<string, unknown>;

async function call(client: Client, name: string, args: Structured): Promise<Structured> {
  const r = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    structuredContent?: Structured;
    content: { text: string }[];
  };
  if (r.isError) return { error: JSON.parse(r.content[0]!.text) as Structured };
  return r.structuredContent ?? {};
}

describe('2026-07-28 requests of an OAuth client act only on what is theirs', () => {
  let project: TempProject;
  let serve: ServeProcess;
  const open: Client[] = [];

  before(async () => {
    project = tempProject('computer:\n  autoLaunch: false\n');
    serve = await startServe(project);
  });
  after(async () => {
    await Promise.all(open.map((c) => c.close().catch(() => {})));
    await serve?.stop();
    project?.cleanup();
  });

  it("a client's default computer is its own, the owner's stays the owner's, and an ungranted name is NOT_FOUND", async () => {
    const owner = await connectHttp(serve.url, serve.token, 'owner-modern', { negotiation: 'modern' });
    open.push(owner);
    const launched = await call(owner, 'launch_computer', { profileId: 'shell' });
    await pollUntil(
      async () => (await call(owner, 'get_computer_status', {})).lifecycle === 'running',
      'the owner computer running',
      60_000,
      200,
    );
    const { clientId, tokens } = await grantTokens(serve, { scope: 'tools computer', name: 'Modern Client' });
    const id = await paddockClientId(project, clientId);
    const client = await connectHttp(serve.url, tokens.access_token, 'client-modern', {
      negotiation: 'modern',
    });
    open.push(client);
    assert.equal(client.getProtocolEra(), 'modern');
    const seen = await call(client, 'get_computer_status', {});
    assert.equal(seen.error, undefined, JSON.stringify(seen));
    assert.notEqual(seen.generation, launched.generation, "the client does not see the owner's computer");
    await call(client, 'recall_memory', { query: 'client-modern-marker' });
    assert.equal(await auditCallerOf(project, 'recall_memory', 'client-modern-marker'), `mcp:${id}`);
    const named = await connectHttp(serve.url, tokens.access_token, 'client-named', {
      negotiation: 'modern',
      computer: 'not-granted',
    });
    open.push(named);
    const refused = await call(named, 'get_computer_status', {});
    assert.equal((refused.error as Structured | undefined)?.code, 'NOT_FOUND', JSON.stringify(refused));
    const still = await call(owner, 'get_computer_status', {});
    assert.equal(still.generation, launched.generation);
  });
});
