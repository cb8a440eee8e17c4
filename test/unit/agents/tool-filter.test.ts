import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileToolFilter, refusalReason, type ToolFilterSpec } from '../../../src/agents/tool-filter.js';
import type { Tool } from '../../../src/tools/tool.js';

function tool(name: string, source: Tool['source'], toolsets: string[]): Tool {
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

const TOOLS = [
  tool('http_get', 'builtin', ['builtin']),
  tool('save_memory', 'builtin', ['builtin']),
  tool('read_file', 'computer', ['computer', 'builtin']),
  tool('run_command', 'computer', ['computer']),
  tool('github_list_pull_requests', 'mcp:github', ['integrations', 'github']),
  tool('github_merge_pull_request', 'mcp:github', ['integrations', 'github']),
  tool('slack_post', 'mcp:slack', ['integrations', 'slack']),
  tool('jira_search', 'plugin:jira', ['integrations']),
];

const allowed = (spec: ToolFilterSpec) => {
  const filter = compileToolFilter(spec);
  return TOOLS.filter((t) => filter(t.name, t)).map((t) => t.name);
};

describe('agent tool filter', () => {
  it('without a tools list: the built-ins plus the tools of the named servers, nothing else', () => {
    assert.deepEqual(allowed({ disallowedTools: [], mcpServers: ['github'] }), [
      'http_get',
      'save_memory',
      'read_file',
      'github_list_pull_requests',
      'github_merge_pull_request',
    ]);
  });

  it('with a tools list: only matching names and globs, and upstream tools only of named servers', () => {
    assert.deepEqual(
      allowed({
        tools: ['save_memory', 'run_command', 'github_*', 'slack_*', 'jira_search'],
        disallowedTools: [],
        mcpServers: ['github'],
      }),
      ['save_memory', 'run_command', 'github_list_pull_requests', 'github_merge_pull_request', 'jira_search'],
    );
  });

  it('disallowedTools wins over every allow', () => {
    assert.deepEqual(
      allowed({
        tools: ['github_*', 'save_memory'],
        disallowedTools: ['github_merge_*'],
        mcpServers: ['github'],
      }),
      ['save_memory', 'github_list_pull_requests'],
    );
  });

  it('explains each refusal in words', () => {
    const spec: ToolFilterSpec = {
      tools: ['github_*'],
      disallowedTools: ['github_merge_*'],
      mcpServers: ['github'],
    };
    const byName = (n: string) => TOOLS.find((t) => t.name === n);
    assert.equal(
      refusalReason(spec, 'github_list_pull_requests', byName('github_list_pull_requests')),
      undefined,
    );
    assert.match(
      refusalReason(spec, 'github_merge_pull_request', byName('github_merge_pull_request'))!,
      /disallowedTools/,
    );
    assert.match(
      refusalReason(spec, 'slack_post', byName('slack_post'))!,
      /server "slack", which the agent's mcp_servers does not name/,
    );
    assert.match(refusalReason(spec, 'http_get', byName('http_get'))!, /not in the agent's tools allow-list/);
    assert.match(refusalReason(spec, 'nope', undefined)!, /no tool with that name/);
    assert.match(
      refusalReason({ disallowedTools: [], mcpServers: [] }, 'run_command', byName('run_command'))!,
      /not a built-in tool/,
    );
  });
});
