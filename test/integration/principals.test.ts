/**
 * Principals against a real `paddock serve` with real OAuth clients (registered, approved on
 * the consent page, holding tokens) and the owner's token: every call is audited with its
 * principal; a client approved for `tools` cannot see, touch or exhaust what the person did not
 * grant (the owner's named computers, the owner's memories, the owner's sessions and computers).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttp } from '../helpers/clients.js';
import { grantTokens, INIT_BODY, paddockClientId } from '../helpers/oauth.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

type Structured = Record<string, unknown>;

async function call(client: Client, name: string, args: Structured): Promise<Structured> {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content as { text?: string }[] | undefined)?.[0]?.text;
  const body = (r.structuredContent ?? (text ? JSON.parse(text) : {})) as Structured;
  return r.isError ? { error: body } : body;
}

interface AuditJson {
  tool: string;
  caller: string;
  principal: string | null;
  input: string;
  success: boolean;
  errorCode: string | null;
  jobId: string | null;
}

async function auditRows(project: TempProject, args: string[] = []): Promise<AuditJson[]> {
  const res = await runCli(project, ['audit', '--json', '--limit', '10000', ...args]);
  assert.equal(res.code, 0, res.stderr);
  return res.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditJson);
}

const CONFIG = `computer:
  defaultProfile: shell
  maxComputers: 4
policy:
  exec:
    allow:
      - name: echo
      - name: cat
principals:
  clients:
    maxSessions: 3
    maxComputers: 1
    maxJobs: 1
  ownerReserve:
    computers: 2
`;

describe('principals: what an OAuth client approved for some scopes may see and use', () => {
  let project: TempProject;
  let serve: ServeProcess;
  const clients: Client[] = [];
  let owner: Client;
  let ownerBox: Client;

  before(async () => {
    project = tempProject(CONFIG);
    serve = await startServe(project);
    owner = await connectHttp(serve.url, serve.token, 'owner');
    ownerBox = await connectHttp(serve.url, serve.token, 'owner-box', { computer: 'review-box' });
    clients.push(owner, ownerBox);
    await call(ownerBox, 'launch_computer', { profileId: 'shell' });
    const written = await call(ownerBox, 'write_file', {
      path: '/workspace/owner-secret.txt',
      content: 'owner-secret-content',
      overwrite: true,
    });
    assert.equal(written.error, undefined, JSON.stringify(written));
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  async function clientSession(token: string, computer?: string): Promise<Client> {
    const c = await connectHttp(serve.url, token, 'third-party', computer ? { computer } : {});
    clients.push(c);
    return c;
  }

  it('audits each call with its principal: owner, the client (also through its job’s tool channel)', async () => {
    const { clientId, tokens } = await grantTokens(serve, {
      scope: 'tools computer',
      name: 'Audited Client',
    });
    const id = await paddockClientId(project, clientId);
    const mine = await clientSession(tokens.access_token);
    await call(owner, 'recall_memory', { query: 'owner-principal-marker' });
    await call(mine, 'recall_memory', { query: 'client-principal-marker' });
    const job = await call(mine, 'run_command', {
      script: `paddock-tool call recall_memory '{"query":"channel-principal-marker"}'`,
      waitMs: 10_000,
    });
    assert.equal(job.exitCode, 0, JSON.stringify(job));
    const rows = await auditRows(project, ['--tool', 'recall_memory']);
    const of = (marker: string) => rows.find((r) => r.input.includes(marker));
    assert.equal(of('owner-principal-marker')?.principal, 'owner');
    assert.equal(of('client-principal-marker')?.principal, `client:${id}`);
    const channel = of('channel-principal-marker');
    assert.equal(channel?.principal, `client:${id}`, 'a channel call acts for whoever started the job');
    assert.match(channel?.caller ?? '', /^channel:g\d+\.job\d+$/);
    const only = await auditRows(project, ['--principal', `client:${id}`]);
    assert.ok(only.length >= 3 && only.every((r) => r.principal === `client:${id}`));
  });

  it('answers NOT_FOUND for the owner’s named computer it was not granted, never naming what exists', async () => {
    const { tokens } = await grantTokens(serve, { scope: 'tools' });
    const intruder = await clientSession(tokens.access_token, 'review-box');
    const attempts: [string, Structured][] = [
      ['read_file', { path: '/workspace/owner-secret.txt' }],
      ['write_file', { path: '/workspace/planted.txt', content: 'planted', overwrite: true }],
      ['shell', { argv: ['cat', '/workspace/owner-secret.txt'] }],
      ['list_dir', { path: '/workspace' }],
    ];
    for (const [tool, args] of attempts) {
      const r = await call(intruder, tool, args);
      const error = r.error as Structured | undefined;
      assert.equal(error?.code, 'NOT_FOUND', `${tool}: ${JSON.stringify(r)}`);
      assert.doesNotMatch(JSON.stringify(r), /owner-secret-content|private:|named:|mcp:/);
    }
    // an unknown name answers the same words: nothing tells which computers exist
    const ghost = await clientSession(tokens.access_token, 'no-such-box');
    const unknown = (await call(ghost, 'read_file', { path: '/workspace/x' })).error as Structured;
    const known = (await call(intruder, 'read_file', { path: '/workspace/x' })).error as Structured;
    assert.equal(
      String(unknown.message).replaceAll('no-such-box', 'NAME'),
      String(known.message).replaceAll('review-box', 'NAME'),
    );
    const check = await call(ownerBox, 'list_dir', { path: '/workspace' });
    assert.doesNotMatch(JSON.stringify(check), /planted/, 'nothing was planted in the owner’s computer');
    // its own computer works as before
    const own = await clientSession(tokens.access_token);
    const echoed = await call(own, 'shell', { argv: ['echo', 'my-own-computer'] });
    assert.match(String(echoed.stdout), /my-own-computer/, JSON.stringify(echoed));
  });

  it('reaches a named computer once the person granted computer:<name>', async () => {
    const { tokens } = await grantTokens(serve, { scope: 'tools computer:review-box' });
    assert.match(tokens.scope, /computer:review-box/);
    const granted = await clientSession(tokens.access_token, 'review-box');
    const r = await call(granted, 'read_file', { path: '/workspace/owner-secret.txt' });
    assert.match(JSON.stringify(r), /owner-secret-content/);
  });

  it('keeps memories apart: the client neither recalls the owner’s notes nor plants its own among them', async () => {
    const { clientId, tokens } = await grantTokens(serve, { scope: 'tools' });
    const id = await paddockClientId(project, clientId);
    await call(owner, 'save_memory', { content: 'owner-private-note about the launch codes' });
    const mine = await clientSession(tokens.access_token);
    const recalled = await call(mine, 'recall_memory', { query: 'launch codes' });
    assert.equal(recalled.count, 0, JSON.stringify(recalled));
    assert.equal(recalled.namespace, `client:${id}`);
    const saved = await call(mine, 'save_memory', { content: 'client-planted note about launch codes' });
    assert.equal(saved.namespace, `client:${id}`);
    const ownerView = await call(owner, 'recall_memory', { query: 'launch codes', limit: 50 });
    assert.equal(ownerView.namespace, 'mcp', 'the owner keeps its namespace');
    assert.deepEqual(
      (ownerView.memories as { content: string }[]).map((m) => m.content),
      ['owner-private-note about the launch codes'],
    );
    const again = await call(await clientSession(tokens.access_token), 'recall_memory', {
      query: 'launch codes',
    });
    assert.equal(again.count, 1, 'its own notes outlive its session');
  });

  it('never evicts the owner’s session: 260 initializes of a client end only its own oldest sessions', async () => {
    const { tokens } = await grantTokens(serve, { scope: 'tools' });
    const statuses = await Promise.all(
      Array.from({ length: 260 }, () =>
        fetch(`${serve.url}/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            authorization: `Bearer ${tokens.access_token}`,
          },
          body: INIT_BODY,
        }).then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        }),
      ),
    );
    assert.ok(
      statuses.every((s) => s === 200 || s === 429),
      statuses.join(','),
    );
    const still = await call(owner, 'recall_memory', { query: 'anything' });
    assert.equal(still.error, undefined, 'the owner’s session lives on');
    const status = await runCli(project, ['status', '--json']);
    const sessions = (JSON.parse(status.stdout) as { sessions: { principal?: string }[] }).sessions;
    const perClient = new Map<string, number>();
    for (const s of sessions) perClient.set(s.principal ?? '?', (perClient.get(s.principal ?? '?') ?? 0) + 1);
    for (const [who, n] of perClient)
      if (who.startsWith('client:'))
        assert.ok(n <= 3, `${who} holds ${n} sessions (principals.clients.maxSessions 3)`);
    assert.ok((perClient.get('owner') ?? 0) >= 2, 'both owner sessions are open');
  });
});

describe('principals: quotas of computers and jobs, and the owner’s reserve', () => {
  it('holds a client to its computers and jobs, names the setting, lists no other computer, and leaves the owner room', async () => {
    const project = tempProject(
      'computer:\n  defaultProfile: shell\n  maxComputers: 3\nprincipals:\n  clients:\n    maxComputers: 1\n    maxJobs: 1\n  ownerReserve:\n    computers: 1\n',
    );
    const serve = await startServe(project);
    const open: Client[] = [];
    const session = async (token: string) => {
      const c = await connectHttp(serve.url, token, 'quota');
      open.push(c);
      return c;
    };
    try {
      const ownerBox = await connectHttp(serve.url, serve.token, 'owner-box', { computer: 'owner-box' });
      open.push(ownerBox);
      const a = (await grantTokens(serve, { scope: 'tools computer' })).tokens.access_token;
      const b = (await grantTokens(serve, { scope: 'tools computer' })).tokens.access_token;
      const c = (await grantTokens(serve, { scope: 'tools computer' })).tokens.access_token;
      const [a1, a2] = [await session(a), await session(a)];
      const first = await call(a1, 'launch_computer', { profileId: 'shell' });
      assert.equal(first.error, undefined, JSON.stringify(first));
      const second = (await call(a2, 'launch_computer', { profileId: 'shell' })).error as Structured;
      assert.equal(second?.code, 'LIMIT_EXCEEDED', JSON.stringify(second));
      assert.match(String(second.message), /principals\.clients\.maxComputers \(1\)/);
      assert.equal(second.limit, 'principals.clients.maxComputers');
      const ofB = await call(await session(b), 'launch_computer', { profileId: 'shell' });
      assert.equal(ofB.error, undefined, JSON.stringify(ofB));
      const ofC = (await call(await session(c), 'launch_computer', { profileId: 'shell' }))
        .error as Structured;
      assert.equal(ofC?.code, 'LIMIT_EXCEEDED', JSON.stringify(ofC));
      assert.equal(ofC.limit, 'principals.ownerReserve.computers');
      for (const refusal of [second, ofC])
        assert.doesNotMatch(
          String(refusal.message),
          /owner-box|private:|named:|mcp:/,
          'no computer is named',
        );
      // the owner still launches: its reserve is not the clients' to take
      const launched = await call(ownerBox, 'launch_computer', { profileId: 'shell' });
      assert.equal(launched.error, undefined, JSON.stringify(launched));

      await pollUntil(
        async () => (await call(a1, 'get_computer_status', {})).lifecycle === 'running',
        'a1 to boot',
        30_000,
      );
      const running = await call(a1, 'run_command', { script: 'sleep 30', waitMs: 0 });
      assert.equal(running.exitCode, null, JSON.stringify(running));
      const over = (await call(a1, 'run_command', { script: 'echo two', waitMs: 0 })).error as Structured;
      assert.equal(over?.code, 'LIMIT_EXCEEDED', JSON.stringify(over));
      assert.match(String(over.message), /principals\.clients\.maxJobs \(1\)/);
      const owners = await call(ownerBox, 'run_command', { script: 'echo owner-unbounded', waitMs: 10_000 });
      assert.match(
        String(owners.stdout),
        /owner-unbounded/,
        'the client’s jobs do not count against the owner',
      );
      await call(a1, 'cancel_job', { jobId: running.jobId });
      const freed = await pollUntil(async () => {
        const r = await call(a1, 'run_command', { script: 'echo freed', waitMs: 10_000 });
        return r.error ? null : r;
      }, 'the cancelled job to give its slot back');
      assert.match(String(freed?.stdout), /freed/);
    } finally {
      for (const c of open) await c.close().catch(() => undefined);
      await serve.stop();
      project.cleanup();
    }
  });
});
