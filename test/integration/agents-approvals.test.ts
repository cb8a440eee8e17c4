import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Approval } from '../../src/approvals/types.js';
import { type AgentsProject, agentMd, startAgentsProject } from '../fixtures/providers/agents-project.js';
import { pollUntil } from '../helpers/poll.js';

const WAITER = agentMd(
  `
name: waiter
description: Saves a note, which a person must approve first.
provider: local-openai
tools: [save_memory]
notify: [answers]
approvals: { wait: 10m }
`,
);

const HASTY = agentMd(
  `
name: hasty
description: Waits one second for approvals.
provider: local-openai
tools: [save_memory]
approvals: { wait: 1s }
`,
);

const UNATTENDED = agentMd(
  `
name: unattended
description: May not wait for a person.
provider: local-openai
tools: [save_memory]
`,
);

describe('agent runs that wait for approval', () => {
  let p: AgentsProject;

  before(async () => {
    p = await startAgentsProject({
      paddockYaml: (dir) =>
        `permissions:\n  save_memory: ask\nnotify:\n  channels:\n    answers:\n      type: file\n      path: ${join(dir, 'out', 'answers.jsonl')}\n`,
      agents: { waiter: WAITER, hasty: HASTY, unattended: UNATTENDED },
    });
  });
  after(async () => {
    await p?.close();
  });

  const nextRequest = (): Promise<Approval> =>
    new Promise((resolve) => {
      const sub = p.paddock.approvals.watch({
        listener: (e) => {
          if (e.kind !== 'requested') return;
          sub.dispose();
          resolve(e.approval);
        },
      });
    });

  it('a run waits (shown as waiting for approval), is approved, and continues with the tool result', async () => {
    p.provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'digest posted' } }] },
      { text: 'Saved the note.' },
    ]);
    const pending = nextRequest();
    const { runId, done } = await p.agents.start('waiter');
    const approval = await pending;
    assert.equal(approval.agent, 'waiter');
    assert.equal(approval.runId, runId);
    await pollUntil(
      async () => (await p.agents.runs({ agent: 'waiter' }))[0]?.waitingApproval === approval.id,
      'the run to show the approval it waits for',
    );
    // the notify channel got the request with a link to the dock
    const file = join(p.dir, 'out', 'answers.jsonl');
    const notice = await pollUntil(
      () => existsSync(file) && readFileSync(file, 'utf8').includes(approval.id),
      'the approval notice',
    );
    assert.ok(notice);
    await p.paddock.approvals.decide(approval.id, { approve: true, by: 'dock:owner', via: 'dock' });
    const run = await done;
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.finalAnswer, 'Saved the note.');
    assert.equal(run.waitingApproval, null);
    const rows = await p.paddock.audit.query({ parentId: runId, tool: 'save_memory' });
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.success, true);
    assert.equal(rows[0]?.approvalId, approval.id);
    assert.equal(rows[0]?.approver, 'dock:owner');
    const seen = p.provider.requests.at(-1)!;
    assert.doesNotMatch(seen.toolResults[0]?.content ?? '', /PERMISSION_REQUIRED/);
  });

  it('an approval that expires is a denial the model is told about', async () => {
    p.provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'too slow' } }] },
      { text: 'Nobody approved; I did not save it.' },
    ]);
    const run = await p.agents.run('hasty');
    assert.equal(run.status, 'succeeded', run.error ?? '');
    const told = p.provider.requests.at(-1)!.toolResults[0]!;
    // the OpenAI wire format carries no error flag on a tool result: the body says it
    assert.match(told.content, /PERMISSION_REQUIRED/);
    assert.match(told.content, /expired/);
    const row = (await p.paddock.audit.query({ parentId: run.id, tool: 'save_memory' }))[0]!;
    assert.equal(row.success, false);
    assert.equal((await p.paddock.approvals.view(row.approvalId!))?.status, 'expired');
  });

  it('without approvals.wait, ask tools are neither listed to the run nor callable', async () => {
    p.provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'refused' } }] },
      { text: 'Could not.' },
    ]);
    const run = await p.agents.run('unattended');
    const [first, second] = p.provider.requests.slice(-2);
    assert.ok(!first?.toolNames.includes('save_memory'));
    assert.match(second?.toolResults[0]?.content ?? '', /NOT_FOUND|PERMISSION_REQUIRED/);
    assert.equal(
      (await p.paddock.approvals.list({ pendingOnly: false })).filter((a) => a.runId === run.id).length,
      0,
    );
  });

  it('"always allow this tool for this agent" writes a rule that later runs use and the operator can remove', async () => {
    p.provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'first' } }] },
      { text: 'ok' },
    ]);
    const pending = nextRequest();
    const { done } = await p.agents.start('waiter');
    const approval = await pending;
    await p.paddock.approvals.decide(approval.id, {
      approve: true,
      by: 'dock:owner',
      via: 'dock',
      scope: 'always',
    });
    await done;
    const rule = (await p.paddock.approvals.rules()).find(
      (r) => r.agent === 'waiter' && r.tool === 'save_memory',
    );
    assert.ok(rule);
    p.provider.script([
      { toolCalls: [{ name: 'save_memory', arguments: { content: 'second' } }] },
      { text: 'ok' },
    ]);
    const run = await p.agents.run('waiter');
    const row = (await p.paddock.audit.query({ parentId: run.id, tool: 'save_memory' }))[0]!;
    assert.equal(row.success, true);
    assert.equal(row.approvalId, approval.id);
    assert.ok(
      !readFileSync(join(p.dir, '.paddock', 'agents', 'waiter', 'AGENT.md'), 'utf8').includes('second'),
    );
    await p.paddock.approvals.removeRule(rule.id, 'cli');
    assert.equal((await p.paddock.approvals.rules()).length, 0);
  });
});
