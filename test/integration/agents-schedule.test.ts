import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunEvent } from '../../src/agents/events.js';
import type { AgentRun } from '../../src/agents/types.js';
import { agentMd, startAgentsProject } from '../fixtures/providers/agents-project.js';
import type { ScriptedTurn, SeenRequest } from '../fixtures/providers/scripted-provider.js';
import { pollUntil } from '../helpers/poll.js';

const TICKER = agentMd(
  `
name: ticker
description: Runs every second.
provider: local-openai
tools: [save_memory]
schedules: ["* * * * * *"]
`,
);

/** One save_memory call, then an answer; the very first model call of the test is slow. */
function tickerModel(slowFirstMs: number): (req: SeenRequest) => ScriptedTurn {
  let calls = 0;
  return (req) => {
    calls++;
    const delayMs = calls === 1 ? slowFirstMs : 0;
    if (req.toolResults.length === 0) {
      return { delayMs, toolCalls: [{ name: 'save_memory', arguments: { content: 'tick' } }] };
    }
    return { text: 'tick done' };
  };
}

describe('the agent scheduler', () => {
  it('runs a schedule firing every second exactly once per tick, skipping ticks while a run is going', async () => {
    const p = await startAgentsProject({ agents: { ticker: TICKER } });
    const events: RunEvent[] = [];
    try {
      p.provider.respond(tickerModel(1500));
      p.agents.onRunEvent((e) => events.push(e));
      const next = p.agents.scheduler.nextRuns();
      assert.equal(next.length, 1);
      assert.ok(next[0]!.next !== null && next[0]!.next > Date.now() - 1000, 'the next run time is visible');
      p.agents.scheduler.start();
      const ticks = () => events.filter((e) => e.type === 'schedule.tick');
      await pollUntil(
        () =>
          ticks().filter((e) => e.action === 'started').length >= 4 &&
          ticks().some((e) => e.action === 'skipped'),
        'four started ticks and a skipped one',
        30_000,
      );
      p.agents.scheduler.stop();
      await pollUntil(
        async () => (await p.agents.runs({ status: 'running' })).length === 0,
        'runs to finish',
        10_000,
      );

      const tickEvents = ticks();
      const times = tickEvents.map((e) => (e.type === 'schedule.tick' ? e.scheduledAt : 0));
      assert.equal(new Set(times).size, times.length, 'every tick is handled once');
      const runs = (await p.agents.runs({ agent: 'ticker', limit: 100 })).reverse();
      const started = tickEvents.filter((e) => e.type === 'schedule.tick' && e.action === 'started');
      assert.equal(runs.length, started.length, 'one run per started tick');
      for (const e of started) {
        if (e.type !== 'schedule.tick') continue;
        assert.equal(runs.filter((r) => r.scheduledAt === e.scheduledAt).length, 1);
      }
      assertNoOverlap(runs);
      for (const run of runs) {
        assert.equal(run.trigger, 'schedule');
        assert.equal(run.status, 'succeeded', run.error ?? '');
        const rows = await p.paddock.audit.query({ parentId: run.id });
        assert.deepEqual(
          rows.map((r) => [r.tool, r.via]),
          [['save_memory', 'schedule']],
        );
      }
      assert.ok(p.logs.some((l) => l.event === 'agent.tick_skipped' && l.agent === 'ticker'));
    } finally {
      await p.close();
    }
  });

  it('catches up at most once after downtime, not once per missed tick, and only when allowed', async () => {
    const yearly = (name: string, extra = '') =>
      agentMd(`
name: ${name}
description: Runs on new year.
provider: local-openai
tools: []
schedules:
  - cron: "0 0 0 1 1 *"
    timezone: UTC
    input: Write the yearly review.
${extra}
`);
    const p = await startAgentsProject({
      agents: {
        yearly: yearly('yearly'),
        'yearly-off': yearly('yearly-off', 'catchUp: false'),
        fresh: yearly('fresh'),
      },
    });
    try {
      p.provider.respond(() => ({ text: 'caught up' }));
      const store = p.paddock.stores.runs;
      const keyOf = (name: string) => p.agents.definitions().find((a) => a.name === name)!.schedules[0]!.key;
      const threeYearsAgo = Date.now() - 3 * 366 * 24 * 3600 * 1000;
      await store.setLastTick('yearly', keyOf('yearly'), threeYearsAgo);
      await store.setLastTick('yearly-off', keyOf('yearly-off'), threeYearsAgo);

      p.agents.scheduler.start();
      const catchUps = async () =>
        (await p.agents.runs({ limit: 100 })).filter((r) => r.trigger === 'catch-up');
      const [run] = await pollUntil(async () => {
        const done = (await catchUps()).filter((r) => r.status !== 'running');
        return done.length > 0 ? done : undefined;
      }, 'the catch-up run');
      assert.equal(run!.agent, 'yearly');
      assert.equal(run!.input, 'Write the yearly review.');
      assert.equal(new Date(run!.scheduledAt!).toISOString().slice(5), '01-01T00:00:00.000Z');
      const log = p.logs.find((l) => l.event === 'agent.catch_up');
      assert.ok(log && Number(log.missed) >= 3, `missed ticks are counted (${JSON.stringify(log)})`);
      assert.ok(p.logs.some((l) => l.event === 'agent.missed_ticks_skipped' && l.agent === 'yearly-off'));
      await pollUntil(
        async () => (await store.lastTick('fresh', keyOf('fresh'))) !== undefined,
        'a new schedule gets a baseline',
      );

      // a restart right away finds nothing missed
      p.agents.scheduler.stop();
      p.agents.scheduler.start();
      p.agents.scheduler.stop();
      await pollUntil(
        async () => (await p.agents.runs({ status: 'running' })).length === 0,
        'no run left going',
      );
      assert.equal((await catchUps()).length, 1);
      assert.ok((await p.agents.runs({ limit: 100 })).every((r) => r.agent === 'yearly'));
      const summary = (await p.agents.list()).find((a) => a.name === 'yearly')!;
      assert.equal(new Date(summary.nextRun!).toISOString().slice(5), '01-01T00:00:00.000Z');
    } finally {
      await p.close();
    }
  });
});

function assertNoOverlap(runs: readonly AgentRun[]): void {
  const sorted = [...runs].sort((a, b) => a.startedAt - b.startedAt);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    assert.ok(
      prev.endedAt !== null && sorted[i]!.startedAt >= prev.endedAt,
      `run ${sorted[i]!.id} started before ${prev.id} ended`,
    );
  }
}
