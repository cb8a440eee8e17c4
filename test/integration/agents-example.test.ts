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

const TOKENS = { GITHUB_TOKEN: 'github_pat_test', SLACK_BOT_TOKEN: 'xoxb-test', SLACK_CHANNEL_ID: 'C0TEST' };

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
      // GitHub's own hosted server, read-only pull-request toolset, the token in a header
      assert.ok(github?.transport === 'http');
      assert.equal(github.name, 'github');
      assert.equal(github.url, 'https://api.githubcopilot.com/mcp/x/pull_requests/readonly');
      assert.deepEqual(github.headers, { Authorization: 'Bearer github_pat_test' });
      assert.deepEqual(Object.keys(github.permissions).sort(), [
        'list_pull_requests',
        'pull_request_read',
        'search_pull_requests',
      ]);
      // a maintained Slack server, allowed to post only to the configured channel
      assert.ok(slack?.transport === 'stdio');
      assert.deepEqual(
        [slack.command, ...slack.args],
        ['npx', '-y', 'slack-mcp-server@^1.3.0', '--transport', 'stdio'],
      );
      assert.equal(slack.env.SLACK_MCP_XOXB_TOKEN, 'xoxb-test');
      assert.equal(slack.env.SLACK_MCP_ADD_MESSAGE_TOOL, 'C0TEST');
      assert.equal(slack.permissions.conversations_add_message, 'auto');
      const configured = JSON.stringify(servers.servers);
      assert.doesNotMatch(configured, /@modelcontextprotocol\/server-(github|slack)/);

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
        agent.allowTool('github_pull_request_read', tool('github_pull_request_read', 'mcp:github')),
        true,
      );
      assert.equal(
        agent.allowTool(
          'slack_conversations_add_message',
          tool('slack_conversations_add_message', 'mcp:slack'),
        ),
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
      () =>
        loadMcpServers(join(dir, '.paddock'), {
          GITHUB_TOKEN: 'github_pat_test',
          SLACK_CHANNEL_ID: 'C0TEST',
        }),
      (e: unknown) => e instanceof ConfigError && e.problems.some((p) => p.includes('SLACK_BOT_TOKEN')),
    );
  });
});
