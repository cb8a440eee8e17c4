/**
 * One server, many clients, many computers — real processes: two stdio bridges and an HTTP
 * client get a computer each; sessions naming a computer share it; a relaunch replaces only
 * what it should; twenty computers run at once and the twenty-first is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttp, connectStdio } from '../helpers/clients.js';
import { startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';

type Structured = Record<string, unknown>;

function bridge(project: TempProject, computer?: string): Promise<Client> {
  return connectStdio(project, 'bridge', computer ? ['--computer', computer] : []);
}

function http(url: string, token: string, computer?: string): Promise<Client> {
  return connectHttp(url, token, 'http', computer ? { computer } : {});
}

async function call(client: Client, name: string, args: Structured): Promise<Structured> {
  const r = await client.callTool({ name, arguments: args });
  const body = (r.structuredContent ?? JSON.parse((r.content as { text: string }[])[0]!.text)) as Structured;
  return r.isError ? { error: body } : body;
}

describe('one server, many clients and computers', () => {
  it('separates private computers, shares named ones, and replaces only what a launch should', async () => {
    const project = tempProject('computer:\n  defaultProfile: shell\n');
    const serve = await startServe(project);
    const clients: Client[] = [];
    try {
      const [a, b] = [await bridge(project), await bridge(project)];
      const c = await http(serve.url, serve.token);
      clients.push(a, b, c);
      const gens = [];
      for (const client of [a, b, c])
        gens.push((await call(client, 'launch_computer', { profileId: 'shell' })).generation);
      assert.equal(new Set(gens).size, 3, `three computers: ${gens}`);
      const jobA = await call(a, 'run_command', { script: 'echo only-a', waitMs: 10_000 });
      const fromB = await call(b, 'read_job', { jobId: jobA.jobId });
      assert.equal(
        (fromB.error as Structured)?.code,
        'NOT_FOUND',
        'a private computer’s ids mean nothing to others',
      );

      const [s1, s2] = [await bridge(project, 'shared-box'), await bridge(project, 'shared-box')];
      const s3 = await http(serve.url, serve.token, 'shared-box');
      clients.push(s1, s2, s3);
      const first = await call(s1, 'launch_computer', { profileId: 'shell' });
      const shared = await call(s2, 'run_command', { script: 'echo shared', waitMs: 10_000 });
      const seen = await call(s3, 'read_job', { jobId: shared.jobId });
      assert.match(
        String(seen.stdout),
        /shared/,
        'a job of the named computer is visible to every session naming it',
      );
      const relaunch = await call(s3, 'launch_computer', { profileId: 'shell' });
      assert.notEqual(relaunch.generation, first.generation);
      const stale = await call(s2, 'read_job', { jobId: shared.jobId });
      assert.equal((stale.error as Structured)?.code, 'STALE_GENERATION');
      for (const [client, gen] of [
        [a, gens[0]],
        [b, gens[1]],
        [c, gens[2]],
      ] as const)
        assert.equal(
          (await call(client, 'get_computer_status', {})).generation,
          gen,
          'private computers untouched',
        );
    } finally {
      for (const client of clients) await client.close().catch(() => undefined);
      await serve.stop();
      project.cleanup();
    }
  });

  it('runs twenty computers at once and refuses the twenty-first with LIMIT_EXCEEDED naming the limit', async () => {
    const project = tempProject('computer:\n  defaultProfile: shell\n  maxComputers: 20\n');
    const serve = await startServe(project);
    const clients: Client[] = [];
    try {
      for (let i = 0; i < 21; i++) clients.push(await http(serve.url, serve.token));
      const launches = await Promise.all(
        clients.slice(0, 20).map((client) => call(client, 'launch_computer', { profileId: 'shell' })),
      );
      assert.deepEqual(
        launches.filter((l) => l.error),
        [],
        'twenty launches within the cap',
      );
      assert.equal(new Set(launches.map((l) => l.generation)).size, 20);
      const refused = await call(clients[20]!, 'launch_computer', { profileId: 'shell' });
      assert.equal((refused.error as Structured)?.code, 'LIMIT_EXCEEDED');
      assert.match(String((refused.error as Structured).message), /computer\.maxComputers \(20\)/);
    } finally {
      for (const client of clients) await client.close().catch(() => undefined);
      await serve.stop();
      project.cleanup();
    }
  });
});
