import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { LoadedAgents } from '../../../src/agents/load-agents.js';
import { type AgentLoadContext, loadAgents } from '../../../src/agents/load-agents.js';
import { providerConfigs } from '../../../src/agents/providers/index.js';
import { agentsConfigSchema } from '../../../src/config/agents-schema.js';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const globalPolicyConfig = policySchema.parse({ http: { allow: ['api.github.com', '*.slack.com'] } });
const config = agentsConfigSchema.parse({
  providers: { local: { type: 'openai', model: 'm1', keyRequired: false } },
});

/** Writes agents (name → AGENT.md) and skills (name → SKILL.md) and loads them. */
function load(
  agents: Record<string, string>,
  skills: Record<string, string> = {},
): LoadedAgents & { dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-agents-load-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(agents)) {
    mkdirSync(join(dir, '.paddock', 'agents', name), { recursive: true });
    writeFileSync(join(dir, '.paddock', 'agents', name, 'AGENT.md'), text);
  }
  for (const [name, text] of Object.entries(skills)) {
    mkdirSync(join(dir, '.paddock', 'skills', name, 'scripts'), { recursive: true });
    writeFileSync(join(dir, '.paddock', 'skills', name, 'SKILL.md'), text);
    writeFileSync(join(dir, '.paddock', 'skills', name, 'scripts', 'run.sh'), 'echo hi\n');
  }
  const ctx: AgentLoadContext = {
    projectDir: dir,
    servers: [
      { name: 'github', state: 'idle' },
      { name: 'old', state: 'disabled' },
    ],
    channels: ['ops', 'log'],
    providers: providerConfigs(config),
    globalPolicy: createWhitelistSandbox(globalPolicyConfig),
    globalPolicyConfig,
    limits: config.limits,
  };
  return { ...loadAgents(ctx), dir };
}

const md = (fm: string, body = 'Do the task.') => `---\n${fm.trim()}\n---\n${body}\n`;
const problemsOf = (r: LoadedAgents, agent: string) =>
  r.errors.find((e) => e.agent === agent)?.problems ?? [];

describe('AGENT.md loader', () => {
  it('loads every key: servers, tools, skills with their files, schedules, notify, limits, policy', () => {
    const r = load(
      {
        digest: md(`
name: digest
description: Posts a digest.
provider: local
mcpServers: [github]
tools: "github_*, save_memory"
disallowedTools: [github_merge_*]
skills: [format]
schedules:
  - "0 9 * * 1-5"
  - { cron: "*/30 * * * * *", timezone: Europe/Berlin, input: twice a minute }
notify: ops
limits: { maxTurns: 7 }
catchUp: false
policy:
  http:
    allow: [api.github.com]
`),
      },
      {
        format: md(
          'name: format\ndescription: The layout.\nallowed-tools: save_memory github_get_pull_request\nmetadata: { version: 2 }',
          'Use bullets.',
        ),
      },
    );
    assert.deepEqual(r.errors, []);
    const [a] = r.agents;
    assert.ok(a);
    assert.equal(a.model, 'm1', 'the provider default model applies');
    assert.deepEqual(a.mcpServers, ['github']);
    assert.deepEqual(a.tools, ['github_*', 'save_memory']);
    assert.deepEqual(a.notify, ['ops']);
    assert.equal(a.limits.maxTurns, 7);
    assert.equal(a.limits.wallTimeMs, config.limits.wallTimeMs);
    assert.equal(a.catchUp, false);
    assert.deepEqual(
      a.schedules.map((s) => [s.cron, s.timezone, s.input]),
      [
        ['0 9 * * 1-5', undefined, undefined],
        ['*/30 * * * * *', 'Europe/Berlin', 'twice a minute'],
      ],
    );
    assert.equal(new Set(a.schedules.map((s) => s.key)).size, 2);
    const [skill] = a.skills;
    assert.equal(skill?.instructions, 'Use bullets.');
    assert.deepEqual(skill?.files, ['scripts/run.sh']);
    assert.deepEqual(skill?.metadata, { version: '2' });
    assert.deepEqual(skill?.allowedTools, ['save_memory', 'github_get_pull_request']);
    assert.deepEqual(a.warnings, []);
    assert.equal(
      a.sandbox.check({ type: 'http', method: 'GET', url: 'https://hooks.slack.com/x' }).allow,
      false,
    );
    assert.equal(
      a.sandbox.check({ type: 'http', method: 'GET', url: 'https://api.github.com/x' }).allow,
      true,
    );
  });

  it('reports a malformed AGENT.md with the file, the line and what to do, and still loads the other agents', () => {
    const r = load({
      good: md('name: good\ndescription: fine\nprovider: local'),
      broken: '---\nname: broken\ndescription: [unclosed\n---\nbody\n',
      nofront: 'Just a body without frontmatter.\n',
      unclosed: '---\nname: unclosed\n',
    });
    assert.deepEqual(
      r.agents.map((a) => a.name),
      ['good'],
    );
    const broken = r.errors.find((e) => e.agent === 'broken');
    assert.ok(broken?.file.endsWith(join('broken', 'AGENT.md')));
    assert.match(broken!.problems[0]!, /^line \d+, column \d+: .*fix the YAML syntax/);
    assert.match(problemsOf(r, 'nofront')[0]!, /must start with a "---" line/);
    assert.match(problemsOf(r, 'unclosed')[0]!, /not closed; add a "---" line/);
  });

  it('rejects unknown keys with a did-you-mean, and bad values naming the key', () => {
    const r = load({
      a: md('name: a\ndescription: x\nprovider: local\nschedule: ["0 9 * * *"]\ncolour: red'),
      b: md('name: b\ndescription: x\nprovider: local\nlimits: { maxTurns: 0, maxTokenz: 5 }'),
      c: md('name: c\ndescription: x\nprovider: local\nmcp_servers: [github]\nmcpServers: [github]'),
      d: md('name: Wrong_Name\ndescription: x\nprovider: local'),
      e: md('name: e\ndescription: x\nprovider: local', ''),
    });
    assert.deepEqual(r.agents, []);
    const a = problemsOf(r, 'a');
    assert.ok(a.includes('schedule: unknown key; did you mean "schedules"?'), a.join('\n'));
    assert.ok(
      a.some((p) => p.startsWith('colour: unknown key; remove it (known keys:')),
      a.join('\n'),
    );
    const b = problemsOf(r, 'b');
    assert.ok(
      b.some((p) => p.startsWith('limits.maxTurns:')),
      b.join('\n'),
    );
    assert.ok(
      b.some((p) => p === 'limits.maxTokenz: unknown key; remove it'),
      b.join('\n'),
    );
    assert.match(problemsOf(r, 'c')[0]!, /not both/);
    assert.match(problemsOf(r, 'd')[0]!, /^name: /);
    assert.match(problemsOf(r, 'e')[0]!, /the task is empty/);
  });

  it('rejects an unknown skill, server, channel or provider, naming what exists', () => {
    const r = load({
      skill: md('name: skill\ndescription: x\nprovider: local\nskills: [nope]'),
      server: md('name: server\ndescription: x\nprovider: local\nmcp_servers: [gitlab]'),
      channel: md('name: channel\ndescription: x\nprovider: local\nnotify: [pager]'),
      provider: md('name: provider\ndescription: x\nprovider: mistral'),
      noprovider: md('name: noprovider\ndescription: x'),
      nomodel: md('name: nomodel\ndescription: x\nprovider: anthropic'),
    });
    assert.match(problemsOf(r, 'skill')[0]!, /^skills\.0 \(.*nope.*SKILL\.md\) .*there is no skill "nope"/);
    assert.match(
      problemsOf(r, 'server')[0]!,
      /^mcp_servers\.0: unknown server "gitlab"; mcp_servers\.yaml has: github, old/,
    );
    assert.match(problemsOf(r, 'channel')[0]!, /^notify\.0: unknown channel "pager"; use one of: ops, log/);
    assert.match(
      problemsOf(r, 'provider')[0]!,
      /^provider: unknown provider "mistral"; use one of: anthropic, local, openai/,
    );
    assert.match(problemsOf(r, 'noprovider')[0]!, /^provider: missing/);
    assert.match(
      problemsOf(r, 'nomodel')[0]!,
      /^model: missing; set it here or as agents\.providers\.anthropic\.model/,
    );
  });

  it('rejects invalid cron expressions and time zones, and expressions that never fire', () => {
    const r = load({
      cron: md(
        'name: cron\ndescription: x\nprovider: local\nschedules: ["61 * * * *", "* * *", {cron: "0 9 * * *", timezone: Mars/Olympus}, "0 0 30 2 *"]',
      ),
    });
    const p = problemsOf(r, 'cron');
    assert.equal(p.length, 4, p.join('\n'));
    assert.match(p[0]!, /^schedules\.0: invalid cron expression "61 \* \* \* \*".*write 5 fields/);
    assert.match(p[1]!, /^schedules\.1: invalid cron expression/);
    assert.match(p[2]!, /^schedules\.2\.timezone: "Mars\/Olympus" is not a known IANA time zone/);
    assert.match(p[3]!, /^schedules\.3: "0 0 30 2 \*" never fires/);
  });

  it('checks SKILL.md: name equal to the directory, known keys only, a body', () => {
    const r = load(
      {
        a: md('name: a\ndescription: x\nprovider: local\nskills: [s1]'),
        b: md('name: b\ndescription: x\nprovider: local\nskills: [s2]'),
      },
      {
        s1: md('name: other\ndescription: x'),
        s2: md('name: s2\ndescription: x\nallowed_tools: a'),
      },
    );
    assert.match(problemsOf(r, 'a')[0]!, /name: "other" must equal the directory name "s1"/);
    assert.match(problemsOf(r, 'b')[0]!, /allowed_tools: unknown key; did you mean "allowed-tools"\?/);
  });

  it('warns (without failing) about a disabled server, a policy entry wider than the global one, and skill tools the agent lacks', () => {
    const r = load(
      {
        w: md(`
name: w
description: x
provider: local
mcp_servers: [old]
tools: [save_memory]
skills: [s]
policy:
  http:
    allow: [example.org]
`),
      },
      { s: md('name: s\ndescription: x\nallowed-tools: http_get') },
    );
    assert.deepEqual(r.errors, []);
    const w = r.agents[0]!.warnings;
    assert.equal(w.length, 3, w.join('\n'));
    assert.match(w[0]!, /server "old" is disabled/);
    assert.match(w[1]!, /policy\.http\.allow: "example\.org" is not allowed by the global policy/);
    assert.match(w[2]!, /"s" expects http_get/);
    assert.equal(
      r.agents[0]!.sandbox.check({ type: 'http', method: 'GET', url: 'https://example.org/' }).allow,
      false,
    );
  });

  it('reports an invalid policy rule of an agent as a load error', () => {
    const r = load({ p: md('name: p\ndescription: x\nprovider: local\npolicy: { http: { allow: ["*"] } }') });
    assert.match(problemsOf(r, 'p')[0]!, /^policy: /);
  });
});
