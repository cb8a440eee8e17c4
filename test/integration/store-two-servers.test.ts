// Two real `paddock serve` processes, each with its own project and data directory, on one
// throwaway PostgreSQL cluster: one audit trail, shared memories, runs and launch links, a
// schedule that fires once per tick across both, and a run of a killed server ended by the other.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { agentMd, TEST_KEY, writeProjectFiles } from '../fixtures/providers/agents-project.js';
import { type ScriptedProvider, startScriptedProvider } from '../fixtures/providers/scripted-provider.js';
import { dockCookie } from '../helpers/oauth.js';
import {
  PADDOCK_BIN,
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import { type PgCluster, startPostgres } from '../helpers/postgres.js';

/** Runs every second on whichever server claims the tick. */
const TICKER = agentMd(
  'name: ticker\ndescription: Runs every second.\nprovider: local-openai\ntools: [save_memory]\nschedules: ["* * * * * *"]',
  'Say tick.',
);
/** Waits on the model for a minute: a run that is still going when its server dies. */
const SLOW = agentMd(
  'name: slow\ndescription: Thinks for a long time.\nprovider: local-openai\ntools: [save_memory]',
  'Think for a minute.',
);

interface Server {
  project: TempProject;
  serve: ServeProcess;
}

describe('two servers on one PostgreSQL store', () => {
  let cluster: PgCluster;
  let provider: ScriptedProvider;
  let a: Server;
  let b: Server;
  const children: ChildProcess[] = [];

  async function server(name: string): Promise<Server> {
    const project = tempProject();
    writeProjectFiles(project.dir, { agents: { ticker: TICKER, slow: SLOW } });
    writeFileSync(
      join(project.dir, 'paddock.yaml'),
      stringify({
        store: { url: cluster.url },
        agents: {
          runLease: { ttlMs: 3_000, renewEveryMs: 500 },
          providers: {
            'local-openai': {
              type: 'openai',
              baseUrl: provider.openaiBaseUrl,
              apiKeyEnv: 'TEST_OPENAI_KEY',
              maxRetries: 0,
              model: 'scripted',
            },
          },
        },
      }),
    );
    project.env.PADDOCK_STORE_PASSWORD = cluster.password;
    project.env.TEST_OPENAI_KEY = TEST_KEY;
    try {
      return { project, serve: await startServe(project) };
    } catch (e) {
      project.cleanup();
      throw new Error(`server ${name} did not start: ${(e as Error).message}`);
    }
  }

  before(async () => {
    cluster = await startPostgres();
    provider = await startScriptedProvider({ apiKey: TEST_KEY });
    provider.respond((req) =>
      `${req.system}${req.firstUserText}`.includes('Think for a minute')
        ? { delayMs: 60_000, text: 'done thinking' }
        : { text: 'tick' },
    );
    [a, b] = await Promise.all([server('a'), server('b')]);
  });

  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    for (const s of [a, b]) {
      await s?.serve.stop();
      s?.project.cleanup();
    }
    await provider?.close();
    await cluster?.cleanup();
  });

  async function tool(
    s: Server,
    name: string,
    args: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const r = await runCli(s.project, ['tools', 'call', name, JSON.stringify(args)]);
    assert.equal(r.code, 0, `${name} failed: ${r.stdout}${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  }

  it('paddock audit --follow on one server prints the calls the other server answers', async () => {
    const follow = spawn(
      process.execPath,
      [PADDOCK_BIN, 'audit', '--follow', '--json', '--tool', 'save_memory'],
      {
        cwd: a.project.dir,
        env: a.project.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(follow);
    let printed = '';
    follow.stdout?.on('data', (d: Buffer) => {
      printed += d.toString();
    });
    // the follower starts from the end of the log; a call before it is ready would be history
    await new Promise((r) => setTimeout(r, 1_000));
    const marker = `written on b ${Date.now()}`;
    await tool(b, 'save_memory', { content: marker });
    await pollUntil(() => printed.includes(marker), 'the follower on a to print the call made on b', 20_000);
    const row = printed
      .split('\n')
      .filter((l) => l.includes(marker))
      .map((l) => JSON.parse(l) as { tool: string; caller: string; success: boolean })[0];
    assert.equal(row?.tool, 'save_memory');
    assert.equal(row?.success, true);
    follow.kill('SIGINT');
  });

  it('a memory saved through one server is recalled through the other', async () => {
    await tool(a, 'save_memory', { content: 'The staging database moved to eu-west-3', tags: ['infra'] });
    const recalled = await tool(b, 'recall_memory', { query: 'staging database' });
    const memories = recalled.memories as { content: string }[];
    assert.equal(memories[0]?.content, 'The staging database moved to eu-west-3');
  });

  it('a launch link created on one server opens on the other', async () => {
    const link = await tool(a, 'create_launch_link', { profileId: 'shell', startupScript: 'echo from-a' });
    const cookie = await dockCookie(b.serve);
    const page = await fetch(`${b.serve.url}/launch/${String(link.id)}`, { headers: { cookie } });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /echo from-a/);
  });

  it('each tick of a schedule runs once across both servers, and every run is listed on both', async () => {
    const runs = async (s: Server) => {
      const r = await runCli(s.project, ['agents', 'runs', 'ticker', '--limit', '100', '--json']);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as { id: string; scheduledAt: number; status: string }[];
    };
    await pollUntil(async () => (await runs(a)).length >= 4, 'four scheduled runs', 60_000, 250);
    const onA = await runs(a);
    const onB = await runs(b);
    const ticks = onA.map((r) => r.scheduledAt);
    assert.equal(new Set(ticks).size, ticks.length, `a tick ran twice: ${ticks.join(', ')}`);
    const idsOnB = new Set(onB.map((r) => r.id));
    for (const run of onA.filter((r) => r.status !== 'running'))
      assert.ok(idsOnB.has(run.id), `${run.id} not on b`);
  });

  it('paddock doctor reports the shared store and its schema, and a wrong password as a failure', async () => {
    const ok = await runCli(a.project, ['doctor']);
    assert.match(
      ok.stdout,
      /ok\s+postgres\s+database "paddock" at 127\.0\.0\.1:\d+ \(role "paddock"\): schema version \d+, up to date/,
    );
    assert.doesNotMatch(ok.stdout, /sqlite/);
    const wrong = await runCli({ ...a.project, env: { ...a.project.env, PADDOCK_STORE_PASSWORD: 'wrong' } }, [
      'doctor',
    ]);
    assert.equal(wrong.code, 1, wrong.stdout);
    assert.match(wrong.stdout, /FAIL\s+postgres\s+PostgreSQL refused the password .*PADDOCK_STORE_PASSWORD/);
  });

  it('a run of a server killed mid-run is marked failed by the other once its lease expires', async () => {
    const start = spawn(process.execPath, [PADDOCK_BIN, 'agents', 'run', 'slow'], {
      cwd: b.project.dir,
      env: b.project.env,
      stdio: 'ignore',
    });
    children.push(start);
    const running = (await pollUntil(
      async () => {
        const r = await runCli(a.project, ['agents', 'runs', 'slow', '--json']);
        const list = JSON.parse(r.stdout || '[]') as { id: string; status: string }[];
        return list.find((run) => run.status === 'running') ?? false;
      },
      'the slow run to be running',
      30_000,
      100,
    )) as { id: string };
    b.serve.child.kill('SIGKILL');
    await b.serve.stop();
    const ended = (await pollUntil(
      async () => {
        const r = await runCli(a.project, ['agents', 'runs', 'slow', '--json']);
        const list = JSON.parse(r.stdout || '[]') as { id: string; status: string; error: string | null }[];
        const run = list.find((x) => x.id === running.id);
        return run && run.status !== 'running' ? run : false;
      },
      'the other server to end the run',
      30_000,
      250,
    )) as { status: string; error: string | null };
    assert.equal(ended.status, 'failed');
    assert.match(ended.error ?? '', /stopped renewing its lease/);
  });
});

describe('paddock serve on a PostgreSQL store it cannot use', () => {
  it('exits 2 at start with the address it could not reach and what to check', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 1));
      });
    });
    const project = tempProject(
      stringify({ store: { url: `postgres://paddock@127.0.0.1:${port}/paddock` } }),
    );
    try {
      project.env.PADDOCK_STORE_PASSWORD = 'unused';
      const r = await runCli(project, ['serve', '--port', '0']);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`Cannot reach the PostgreSQL database "paddock" at 127\\.0\\.0\\.1:${port}`),
      );
      assert.match(r.stderr, /Check that the database server runs/);
    } finally {
      project.cleanup();
    }
  });
});
