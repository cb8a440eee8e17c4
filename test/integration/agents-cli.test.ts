import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runAgentsCommand } from '../../src/cli/agents.js';
import { agentMd, TEST_KEY, writeProjectFiles } from '../fixtures/providers/agents-project.js';
import { type ScriptedProvider, startScriptedProvider } from '../fixtures/providers/scripted-provider.js';

/** Runs `paddock agents …` in this process and captures what it prints. */
async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runAgentsCommand(args, {
    out: (t) => {
      out += `${t}\n`;
    },
    err: (t) => {
      err += `${t}\n`;
    },
  });
  return { code, out, err };
}

describe('paddock agents (CLI)', () => {
  let dir: string;
  let provider: ScriptedProvider;
  let config: string;
  const KEYS = ['PADDOCK_DATA', 'PADDOCK_CONFIG', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;
  const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-agents-cli-'));
    provider = await startScriptedProvider({ apiKey: TEST_KEY });
    writeProjectFiles(dir, {
      paddockYaml: () => 'notify:\n  channels:\n    ops:\n      type: log\n',
      agents: {
        greeter: agentMd(
          'name: greeter\ndescription: Says hello.\nprovider: openai\nmodel: gpt-test\ntools: [save_memory]\nschedules: [{cron: "0 9 * * 1-5", timezone: UTC}]\nnotify: [ops]',
          'Greet the team.',
        ),
        broken: agentMd(
          'name: broken\ndescription: Bad cron.\nprovider: openai\nmodel: m\nschedules: ["99 * * * *"]',
        ),
      },
    });
    config = join(dir, 'paddock.yaml');
    process.env.PADDOCK_DATA = join(dir, 'data');
    process.env.OPENAI_BASE_URL = provider.openaiBaseUrl;
    delete process.env.OPENAI_API_KEY;
    delete process.env.PADDOCK_CONFIG;
  });

  after(async () => {
    for (const k of KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    await provider?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists agents with schedules and next run times, and the agents that did not load (exit 1)', async () => {
    const r = await cli(['list', '--config', config]);
    assert.equal(r.code, 1);
    assert.match(r.out, /^greeter {2}\(openai \/ gpt-test\)/m);
    assert.match(r.out, /schedule: 0 9 \* \* 1-5 \(UTC\) {2}next \d{4}-\d\d-\d\dT09:00/);
    assert.match(
      r.out,
      /^broken: NOT LOADED \(.*AGENT\.md\)\n {2}schedules\.0: invalid cron expression "99 \* \* \* \*"/m,
    );
    const json = JSON.parse((await cli(['list', '--json', '--config', config])).out);
    assert.deepEqual(
      json.agents.map((a: { name: string }) => a.name),
      ['greeter'],
    );
    assert.equal(typeof json.agents[0].nextRun, 'number');
    assert.deepEqual(
      json.errors.map((e: { agent: string }) => e.agent),
      ['broken'],
    );
  });

  it('runs an agent: a missing key fails the run (exit 1) with the variable to set', async () => {
    const r = await cli(['run', 'greeter', '--config', config]);
    assert.equal(r.code, 1);
    assert.match(r.err, /greeter\s+manual\s+failed/);
    assert.match(r.err, /has no API key: set OPENAI_API_KEY/);
    assert.equal(r.out, '');
  });

  it('runs an agent to its final answer (exit 0), then lists and shows the run with its calls', async () => {
    process.env.OPENAI_API_KEY = TEST_KEY;
    provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'greeted' } }] },
      { text: 'Hello, team!' },
    ]);
    const r = await cli(['run', 'greeter', '--input', 'Say hello.', '--config', config]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'Hello, team!\n');
    assert.equal(provider.requests.at(-1)!.model, 'gpt-test');

    const runs = JSON.parse((await cli(['runs', 'greeter', '--json', '--config', config])).out);
    assert.deepEqual(
      runs.map((x: { status: string }) => x.status),
      ['succeeded', 'failed'],
    );
    const id = runs[0].id as string;
    const table = await cli(['runs', '--config', config]);
    assert.match(table.out, new RegExp(`^${id}\\s+greeter\\s+manual\\s+succeeded`, 'm'));

    const shown = await cli(['show', id, '--config', config]);
    assert.equal(shown.code, 0);
    assert.match(shown.out, /input: Say hello\./);
    assert.match(shown.out, /notify ops: sent/);
    assert.match(shown.out, /Tool calls \(1\):\n {2}\S.*save_memory\s+agent:run_\S+\s+agent\s+ok/);
    assert.match(shown.out, /Final answer:\nHello, team!/);
    const details = JSON.parse((await cli(['show', id, '--json', '--config', config])).out);
    assert.equal(details.calls[0].parentId, id);
  });

  it('explains usage mistakes and unknown runs', async () => {
    await assert.rejects(cli(['run', '--config', config]), /needs an agent name/);
    await assert.rejects(cli(['frobnicate', '--config', config]), /unknown subcommand "frobnicate"/);
    await assert.rejects(cli(['list', '--input', 'x', '--config', config]), /--input only applies/);
    const missing = await cli(['show', 'run_nope', '--config', config]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /no run "run_nope"/);
    await assert.rejects(
      cli(['run', 'ghost', '--config', config]),
      /There is no agent "ghost"; use one of: greeter/,
    );
    await assert.rejects(cli(['run', 'broken', '--config', config]), /Agent "broken" did not load/);
  });
});
