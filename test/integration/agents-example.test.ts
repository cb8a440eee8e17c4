import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAgents } from '../../src/agents/load-agents.js';
import { providerConfigs } from '../../src/agents/providers/index.js';
import { agentsConfigSchema } from '../../src/config/agents-schema.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { loadMcpServers } from '../../src/integrations/load-config.js';
import { compilePolicy } from '../../src/main.js';
import type { Tool } from '../../src/tools/tool.js';

/** examples/daily-pr-digest, found above the compiled test or in the working directory. */
function exampleDir(): string {
  const rel = join('examples', 'daily-pr-digest');
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, rel, 'paddock.yaml'))) return join(dir, rel);
  }
  const fromCwd = join(process.cwd(), rel);
  assert.ok(
    existsSync(join(fromCwd, 'paddock.yaml')),
    `cannot find ${rel}; run the tests from the repository root`,
  );
  return fromCwd;
}

const TOKENS = { GITHUB_TOKEN: 'ghp_test', SLACK_BOT_TOKEN: 'xoxb-test', SLACK_TEAM_ID: 'T0TEST' };

function tool(name: string, source: Tool['source'], toolsets: string[] = []): Tool {
  return {
    name,
    description: name,
    inputSchema: { type: 'object' },
    annotations: {},
    source,
    toolsets,
    execute: async () => ({}),
  };
}

describe('examples/daily-pr-digest', () => {
  it('loads without problems: config, both MCP servers with their tokens, the agent, its skill and schedule', () => {
    const dir = exampleDir();
    const data = mkdtempSync(join(tmpdir(), 'paddock-example-'));
    try {
      const loaded = loadConfig({
        configPath: join(dir, 'paddock.yaml'),
        cwd: dir,
        env: { PADDOCK_DATA: data },
      });
      const servers = loadMcpServers(join(dir, '.paddock'), TOKENS);
      assert.deepEqual(servers.warnings, []);
      const [github, slack] = servers.servers;
      assert.ok(github?.transport === 'stdio' && slack?.transport === 'stdio');
      assert.equal(github.name, 'github');
      assert.deepEqual(
        [github.command, ...github.args],
        ['npx', '-y', '@modelcontextprotocol/server-github'],
      );
      assert.equal(github.env.GITHUB_PERSONAL_ACCESS_TOKEN, 'ghp_test');
      assert.deepEqual([slack.command, ...slack.args], ['npx', '-y', '@modelcontextprotocol/server-slack']);
      assert.equal(slack.env.SLACK_BOT_TOKEN, 'xoxb-test');
      assert.equal(slack.env.SLACK_TEAM_ID, 'T0TEST');
      assert.equal(github.permissions.list_pull_requests, 'auto');
      assert.equal(slack.permissions.slack_post_message, 'auto');

      const config = agentsConfigSchema.parse({});
      const { agents, errors } = loadAgents({
        projectDir: loaded.projectDir,
        servers: servers.servers.map((s) => ({ name: s.name, state: 'idle' })),
        channels: Object.keys(loaded.config.notify.channels),
        providers: providerConfigs(config),
        globalPolicy: compilePolicy(loaded),
        globalPolicyConfig: loaded.config.policy,
        limits: config.limits,
      });
      assert.deepEqual(errors, []);
      assert.equal(agents.length, 1);
      const agent = agents[0]!;
      assert.equal(agent.name, 'daily-pr-digest');
      assert.equal(agent.provider, 'anthropic');
      assert.deepEqual(agent.mcpServers, ['github', 'slack']);
      assert.deepEqual(agent.notify, ['digest-log']);
      assert.deepEqual(agent.warnings, []);
      assert.equal(agent.schedules.length, 1);
      assert.equal(agent.schedules[0]!.cron, '0 9 * * 1-5');
      assert.deepEqual(
        agent.skills.map((s) => [s.name, s.files]),
        [['pr-digest-format', ['example.md']]],
      );
      assert.match(agent.instructions, /involves:@me/);

      assert.equal(
        agent.allowTool('github_list_pull_requests', tool('github_list_pull_requests', 'mcp:github')),
        true,
      );
      assert.equal(
        agent.allowTool('slack_slack_post_message', tool('slack_slack_post_message', 'mcp:slack')),
        true,
      );
      assert.equal(agent.allowTool('save_memory', tool('save_memory', 'builtin', ['builtin'])), true);
      assert.equal(agent.allowTool('http_get', tool('http_get', 'builtin', ['builtin'])), false);
      assert.equal(
        agent.allowTool('github_merge_pull_request', tool('github_merge_pull_request', 'mcp:github')),
        false,
      );
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });

  it('names the missing token when one is not set', () => {
    const dir = exampleDir();
    assert.throws(
      () => loadMcpServers(join(dir, '.paddock'), { GITHUB_TOKEN: 'ghp_test', SLACK_TEAM_ID: 'T0TEST' }),
      (e: unknown) => e instanceof ConfigError && e.problems.some((p) => p.includes('SLACK_BOT_TOKEN')),
    );
  });
});
