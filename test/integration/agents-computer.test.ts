import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OWNER } from '../../src/shared/principal.js';
import { agentMd, startAgentsProject } from '../fixtures/providers/agents-project.js';

const WORKER = agentMd(
  `
name: worker
description: Runs a script in the computer that calls a tool through paddock-tool.
provider: local-openai
tools: [launch_computer, get_computer_status, run_command, read_job, save_memory]
`,
);

/**
 * An agent run drives the real computer (bwrap): its run_command job calls save_memory through
 * `paddock-tool` over the tool channel, and that call is recorded under the run.
 */
describe('an agent run that uses the computer', () => {
  it('links the tool-channel calls of a run_command job to the run (nested under the run_command call)', async () => {
    const p = await startAgentsProject({ agents: { worker: WORKER } });
    try {
      p.provider.script([
        { toolCalls: [{ name: 'launch_computer', arguments: { profileId: 'shell' } }] },
        {
          toolCalls: [
            {
              name: 'run_command',
              arguments: {
                script: `paddock-tool call save_memory '{"content":"written from the computer"}'`,
                waitMs: 10000,
                timeoutMs: 30000,
              },
            },
          ],
        },
        { text: 'The script saved a note.' },
      ]);
      const run = await p.agents.run('worker');
      assert.equal(run.status, 'succeeded', run.error ?? '');
      const commandResult = p.provider.requests.at(-1)!.toolResults[0]!.content;
      assert.match(commandResult, /"exitCode":0/, commandResult);
      const calls = (await p.agents.show(run.id))!.calls;
      const command = calls.find((c) => c.tool === 'run_command');
      assert.ok(command, `run_command is among the calls: ${calls.map((c) => c.tool).join(', ')}`);
      assert.equal(command.depth, 1);
      const nested = calls.find((c) => c.tool === 'save_memory');
      assert.ok(nested, 'the channel call is listed with the run');
      assert.equal(nested.depth, 2);
      assert.equal(nested.parentId, command.id);
      assert.equal(nested.via, 'channel');
      assert.match(nested.caller, /^channel:/);
      assert.equal(nested.success, true);
    } finally {
      await p.close();
    }
  });

  it('gives a scheduled run a computer of its own: the session’s computer, its jobs and its generation are untouched', async () => {
    const p = await startAgentsProject({ agents: { worker: WORKER } });
    try {
      const session = { principal: OWNER, caller: 'mcp:person', via: 'direct' as const, attended: true };
      const call = async (name: string, input: Record<string, unknown>) => {
        const o = await p.paddock.gateway.call(name, input, session);
        assert.ok(o.ok, JSON.stringify(o));
        return o.result.structured as Record<string, unknown>;
      };
      const launched = await call('launch_computer', { profileId: 'shell' });
      const job = await call('run_command', { script: 'echo the-person-s-job', waitMs: 10_000 });
      p.provider.script([
        { toolCalls: [{ name: 'launch_computer', arguments: { profileId: 'shell' } }] },
        {
          toolCalls: [
            { name: 'run_command', arguments: { script: 'echo from-the-schedule', waitMs: 10_000 } },
          ],
        },
        { text: 'Done.' },
      ]);
      const run = await p.agents.run('worker', { trigger: 'schedule' });
      assert.equal(run.status, 'succeeded', run.error ?? '');
      const status = await call('get_computer_status', {});
      assert.equal(status.generation, launched.generation, 'the session’s computer was not replaced');
      assert.equal(status.lifecycle, 'running');
      const read = await call('read_job', { jobId: job.jobId });
      assert.match(String(read.stdout), /the-person-s-job/, 'the session’s job is still there');
      const runCalls = (await p.agents.show(run.id))!.calls;
      const runLaunch = runCalls.find((c) => c.tool === 'launch_computer');
      assert.ok(
        runLaunch?.generation && runLaunch.generation !== launched.generation,
        'the run booted its own',
      );
    } finally {
      await p.close();
    }
  });
});
