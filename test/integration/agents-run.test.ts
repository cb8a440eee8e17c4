import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AgentRun } from '../../src/agents/types.js';
import { packageBin } from '../fixtures/mcp/harness.js';
import { type AgentsProject, agentMd, startAgentsProject } from '../fixtures/providers/agents-project.js';

const HELPER = agentMd(
  `
name: helper
description: Keeps notes and echoes things for the tests.
provider: local-openai
mcp_servers: [everything]
tools: [save_memory, recall_memory, "everything_*"]
skills: [house-style]
notify: [answers]
`,
  'Save a note about the digest format, echo a greeting, then report what you did.',
);

const ANTHROPIC = agentMd(
  `
name: claude-helper
description: The same helper over the Anthropic wire format.
provider: local-anthropic
mcpServers: [everything]
tools: everything_echo, save_memory
limits: { maxTurns: 5 }
`,
);

const LOOPER = agentMd(
  `
name: looper
description: Never stops calling tools.
provider: local-openai
tools: [save_memory]
limits: { maxTurns: 2 }
`,
);

const SLOW = agentMd(
  `
name: slow
description: Uses a provider that never answers in time.
provider: slow
tools: [save_memory]
`,
);

const RETRY = agentMd(
  `
name: retry
description: Uses a provider that is busy at first.
provider: retrying
tools: []
`,
);

const WALL = agentMd(
  `
name: wall
description: Has one second to finish.
provider: local-openai
tools: []
limits: { wallTimeMs: 1000 }
`,
);

const NARROW = agentMd(
  `
name: narrow
description: May only reach other.test.
provider: local-openai
tools: [http_get]
policy:
  http:
    allow: [other.test]
`,
);

const BADKEY = agentMd(
  `
name: badkey
description: Uses a provider whose key is wrong.
provider: badkey
`,
);

const NOKEY = agentMd(
  `
name: nokey
description: Uses a provider whose key is missing.
provider: nokey
`,
);

describe('agent runs over the gateway with a scripted model', () => {
  let p: AgentsProject;
  let askTool: string;
  const auditOf = (run: AgentRun) => p.paddock.audit.query({ parentId: run.id, ascending: true });

  before(async () => {
    p = await startAgentsProject({
      paddockYaml: (dir) =>
        `policy:\n  http:\n    allow: [allowed.test, other.test]\nnotify:\n  channels:\n    answers:\n      type: file\n      path: ${join(dir, 'out', 'answers.jsonl')}\n`,
      mcpServersYaml: () =>
        `mcpServers:\n  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(packageBin('@modelcontextprotocol/server-everything'))}, "stdio"]\n    permissions:\n      echo: auto\n`,
      agents: {
        wall: WALL,
        narrow: NARROW,
        helper: HELPER,
        'claude-helper': ANTHROPIC,
        looper: LOOPER,
        slow: SLOW,
        retry: RETRY,
        badkey: BADKEY,
        nokey: NOKEY,
      },
      skills: {
        'house-style': {
          skill:
            '---\nname: house-style\ndescription: How answers are written.\n---\n\nAnswer in one short paragraph.\n',
          files: { 'templates/answer.md': '# Answer\n' },
        },
      },
      agentsConfig: (provider) => ({
        providers: {
          slow: {
            type: 'openai',
            baseUrl: provider.openaiBaseUrl,
            apiKeyEnv: 'TEST_OPENAI_KEY',
            timeoutMs: 1000,
            maxRetries: 0,
            model: 'scripted',
          },
          retrying: {
            type: 'openai',
            baseUrl: provider.openaiBaseUrl,
            apiKeyEnv: 'TEST_OPENAI_KEY',
            maxRetries: 2,
            model: 'scripted',
          },
          badkey: {
            type: 'anthropic',
            baseUrl: provider.url,
            apiKeyEnv: 'UNSET_TEST_KEY',
            maxRetries: 0,
            model: 'scripted',
          },
          nokey: { type: 'anthropic', baseUrl: provider.url, apiKeyEnv: 'UNSET_TEST_KEY', model: 'scripted' },
        },
      }),
    });
    assert.deepEqual(p.agents.loadErrors(), []);
    await p.paddock.integrations.discovered();
    const upstream = p.paddock.registry.list((t) => t.source === 'mcp:everything');
    const other = upstream.find((t) => t.name !== 'everything_echo');
    assert.ok(other, `everything lists more than echo (have ${upstream.map((t) => t.name).join(', ')})`);
    askTool = other.name;
  });

  after(async () => {
    await p?.close();
  });

  it('calls a built-in and an upstream MCP tool, audits every call under the run and delivers the answer', async () => {
    p.provider.script([
      {
        toolCalls: [
          { name: 'save_memory', arguments: { content: 'The digest lists PRs by age.', tags: ['digest'] } },
          { name: 'everything_echo', arguments: { message: 'hi' } },
        ],
      },
      { text: 'Saved the note and echoed hi.' },
    ]);
    const run = await p.agents.run('helper', { input: 'Start now, please.' });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.finalAnswer, 'Saved the note and echoed hi.');
    assert.equal(run.trigger, 'manual');
    assert.equal(run.turns, 2);
    assert.equal(run.inputTokens + run.outputTokens, 240);

    const [first, second] = p.provider.requests.slice(-2);
    assert.ok(first && second);
    assert.equal(first.format, 'openai');
    assert.equal(first.headers.authorization, 'Bearer test-key-123');
    assert.equal(first.model, 'scripted');
    assert.equal(first.firstUserText, 'Start now, please.');
    assert.match(first.system, /Save a note about the digest format/);
    assert.match(
      first.system,
      /# Skill: house-style[\s\S]*Answer in one short paragraph[\s\S]*templates\/answer\.md/,
    );
    assert.ok(
      first.toolNames.includes('save_memory') && first.toolNames.includes('everything_echo'),
      first.toolNames.join(),
    );
    assert.ok(!first.toolNames.includes('http_get'), 'tools outside the allow-list are not shown');
    assert.ok(!first.toolNames.includes(askTool), 'ask tools are not shown to an unattended run');
    assert.equal(second.toolResults.length, 2);
    assert.match(second.toolResults[0]!.content, /"namespace"/);
    assert.match(second.toolResults[1]!.content, /hi/);

    const rows = await auditOf(run);
    assert.deepEqual(
      rows.map((r) => [r.tool, r.source, r.success]),
      [
        ['save_memory', 'builtin', true],
        ['everything_echo', 'mcp:everything', true],
      ],
    );
    for (const r of rows) {
      assert.equal(r.caller, `agent:${run.id}`);
      assert.equal(r.via, 'agent');
      assert.equal(r.parentId, run.id);
    }
    const shown = await p.agents.show(run.id);
    assert.deepEqual(
      shown?.calls.map((c) => [c.tool, c.depth]),
      [
        ['save_memory', 1],
        ['everything_echo', 1],
      ],
    );
    assert.deepEqual(
      shown?.run.skills.map((s) => s.name),
      ['house-style'],
    );

    const file = join(p.dir, 'out', 'answers.jsonl');
    assert.ok(existsSync(file));
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(lines.length, 1);
    assert.equal(lines[0].channel, 'answers');
    assert.equal(lines[0].message, 'Saved the note and echoed hi.');
    assert.equal(lines[0].data.runId, run.id);
    assert.deepEqual(
      run.deliveries.map((d) => [d.channel, d.ok]),
      [['answers', true]],
    );
  });

  it('refuses a tool outside the allow-list and an ask tool, tells the model why, and audits both', async () => {
    p.provider.script([
      {
        toolCalls: [
          { name: 'http_get', arguments: { url: 'https://example.com/' } },
          { name: askTool, arguments: {} },
        ],
      },
      { text: 'I could not use those tools.' },
    ]);
    const run = await p.agents.run('helper');
    assert.equal(run.status, 'succeeded', run.error ?? '');
    const results = p.provider.requests.at(-1)!.toolResults;
    assert.equal(results.length, 2);
    const refused = JSON.parse(results[0]!.content);
    assert.equal(refused.code, 'NOT_FOUND');
    assert.match(refused.message, /You cannot use "http_get": it is not in the agent's tools allow-list/);
    const ask = JSON.parse(results[1]!.content);
    assert.equal(ask.code, 'PERMISSION_REQUIRED');
    assert.match(ask.message, /approval/);
    const rows = await auditOf(run);
    assert.deepEqual(
      rows.map((r) => [r.tool, r.success, r.errorCode]),
      [
        ['http_get', false, 'NOT_FOUND'],
        [askTool, false, 'PERMISSION_REQUIRED'],
      ],
    );
    assert.ok(p.logs.some((l) => l.event === 'agent.tool_refused' && l.tool === 'http_get'));
  });

  it('speaks the Anthropic wire format: tool_use in, tool_result (with is_error) back', async () => {
    p.provider.script([
      { toolCalls: [{ name: 'everything_echo', arguments: {} }] },
      { toolCalls: [{ name: 'everything_echo', arguments: { message: 'again' } }] },
      { text: 'Echoed again.' },
    ]);
    const run = await p.agents.run('claude-helper', { trigger: 'api' });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    const requests = p.provider.requests.slice(-3);
    assert.ok(requests.every((r) => r.format === 'anthropic' && r.headers['x-api-key'] === 'test-key-123'));
    assert.deepEqual(requests[0]!.toolNames.sort(), ['everything_echo', 'save_memory']);
    assert.equal(requests[1]!.toolResults[0]!.isError, true);
    assert.match(requests[1]!.toolResults[0]!.content, /INVALID_ARGUMENT/);
    assert.equal(requests[2]!.toolResults[0]!.isError, false);
    assert.match(requests[2]!.toolResults[0]!.content, /again/);
    assert.deepEqual(
      (await auditOf(run)).map((r) => [r.tool, r.via, r.success]),
      [
        ['everything_echo', 'agent', false],
        ['everything_echo', 'agent', true],
      ],
    );
  });

  it('stops a run that is over its turn limit with status limit', async () => {
    p.provider.respond(() => ({ toolCalls: [{ name: 'save_memory', arguments: { content: 'again' } }] }));
    const run = await p.agents.run('looper');
    assert.equal(run.status, 'limit');
    assert.equal(run.turns, 2);
    assert.equal(run.errorCode, 'LIMIT_EXCEEDED');
    assert.match(run.error ?? '', /limit of 2 turns/);
    assert.equal((await auditOf(run)).length, 2);
  });

  it('records a malformed tool call from the provider as a failed run, without calling anything', async () => {
    p.provider.script([{ toolCalls: [{ name: 'save_memory', arguments: '{"content": ' }] }]);
    const run = await p.agents.run('helper');
    assert.equal(run.status, 'failed');
    assert.equal(run.errorCode, 'UPSTREAM_ERROR');
    assert.match(run.error ?? '', /malformed tool call .*not valid JSON/);
    assert.equal((await auditOf(run)).length, 0);
    assert.deepEqual(run.deliveries, []);
  });

  it('records a provider timeout as a clear error in the run', async () => {
    p.provider.script([{ delayMs: 5000, text: 'too late' }]);
    const run = await p.agents.run('slow');
    assert.equal(run.status, 'failed');
    assert.equal(run.errorCode, 'TIMEOUT');
    assert.match(run.error ?? '', /did not answer within 1000 ms/);
  });

  it('stops a run at its wall time with status limit', async () => {
    p.provider.script([{ delayMs: 5000, text: 'too late' }]);
    const run = await p.agents.run('wall');
    assert.equal(run.status, 'limit');
    assert.equal(run.errorCode, 'LIMIT_EXCEEDED');
    assert.match(run.error ?? '', /wall time of 1000 ms/);
    assert.ok(
      run.endedAt !== null && run.endedAt - run.startedAt < 4000,
      'the run ended at its wall time, not the provider',
    );
    p.provider.script([]);
  });

  it("applies the agent's narrowed policy to its calls (both policies must allow)", async () => {
    p.provider.script([
      { toolCalls: [{ name: 'http_get', arguments: { url: 'https://allowed.test/' } }] },
      { text: 'Refused, as expected.' },
    ]);
    const run = await p.agents.run('narrow');
    assert.equal(run.status, 'succeeded', run.error ?? '');
    const [row] = await auditOf(run);
    assert.equal(row?.errorCode, 'POLICY_DENIED');
    assert.match(row?.policyRule ?? '', /^agent:/);
    const result = JSON.parse(p.provider.requests.at(-1)!.toolResults[0]!.content);
    assert.match(result.message, /Refused by the agent's own policy/);
  });

  it('retries HTTP 429 and 503 with backoff and then succeeds', async () => {
    p.provider.script([
      { status: 429, headers: { 'retry-after': '0' } },
      { status: 503, headers: { 'retry-after': '0' } },
      { text: 'Third time lucky.' },
    ]);
    const run = await p.agents.run('retry');
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.finalAnswer, 'Third time lucky.');
    assert.equal(p.logs.filter((l) => l.event === 'agent.provider_retry' && l.runId === run.id).length, 2);
  });

  it('fails with a clear error on HTTP 401 and names where the key comes from', async () => {
    mkdirSync(join(p.dataDir, 'keys'), { recursive: true });
    writeFileSync(join(p.dataDir, 'keys', 'badkey'), 'wrong-key\n', { mode: 0o600 });
    const before = p.provider.requests.length;
    const run = await p.agents.run('badkey');
    assert.equal(p.provider.requests.length, before + 1, 'a rejected key is not retried');
    assert.equal(run.status, 'failed');
    assert.match(run.error ?? '', /rejected the API key \(HTTP 401/);
    assert.match(run.error ?? '', /UNSET_TEST_KEY/);
    assert.doesNotMatch(run.error ?? '', /wrong-key/);
  });

  it('fails before calling the provider when its key is missing', async () => {
    const before = p.provider.requests.length;
    const run = await p.agents.run('nokey');
    assert.equal(run.status, 'failed');
    assert.match(run.error ?? '', /has no API key: set UNSET_TEST_KEY or write the key to .*keys\/nokey/);
    assert.equal(p.provider.requests.length, before);
  });

  it('refuses a second run of an agent that is still running', async () => {
    p.provider.script([{ delayMs: 300, text: 'slow answer' }]);
    const first = await p.agents.start('helper');
    await assert.rejects(p.agents.start('helper'), /already running/);
    const run = await first.done;
    assert.equal(run.status, 'succeeded', run.error ?? '');
  });

  it('cancels a run on request (status cancelled)', async () => {
    p.provider.script([{ delayMs: 5000, text: 'never seen' }]);
    const before = p.provider.requests.length;
    const started = await p.agents.start('helper');
    const deadline = Date.now() + 5000;
    while (p.provider.requests.length === before) {
      if (Date.now() > deadline) throw new Error('run did not start');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(p.agents.cancel(started.runId), true);
    const run = await started.done;
    assert.equal(run.status, 'cancelled');
    p.provider.script([]);
  });
});
