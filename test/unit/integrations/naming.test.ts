import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  findCollisions,
  MAX_TOOL_NAME_LENGTH,
  sanitizeGlob,
  sanitizeName,
  upstreamToolName,
} from '../../../src/integrations/naming.js';

describe('tool naming', () => {
  test('sanitises to lower-case [a-z0-9_] and collapses runs of other characters', () => {
    assert.equal(sanitizeName('My-Server'), 'my_server');
    assert.equal(sanitizeName('get.Issue--Comments'), 'get_issue_comments');
    assert.equal(sanitizeName('__private__'), 'private');
    assert.equal(sanitizeName('read_text_file'), 'read_text_file');
    assert.equal(sanitizeName('ünïcode tool'), 'n_code_tool');
  });

  test('names an upstream tool <server>_<tool>', () => {
    assert.equal(upstreamToolName('everything', 'echo'), 'everything_echo');
    assert.equal(upstreamToolName('filesystem', 'read_text_file'), 'filesystem_read_text_file');
    assert.equal(upstreamToolName('Linear', 'list-issues'), 'linear_list_issues');
  });

  test('cuts a long name to 64 characters ending in a hash, keeping two long names distinct', () => {
    const server = 'a-very-long-server-name-for-an-enterprise-system';
    const a = upstreamToolName(server, 'get_customer_account_balance_history_for_region');
    const b = upstreamToolName(server, 'get_customer_account_balance_history_for_country');
    assert.ok(a.length <= MAX_TOOL_NAME_LENGTH && b.length <= MAX_TOOL_NAME_LENGTH);
    assert.match(a, /^a_very_long_server_name[a-z0-9_]*_[0-9a-f]{8}$/);
    assert.notEqual(a, b);
    assert.equal(upstreamToolName(server, 'get_customer_account_balance_history_for_region'), a, 'stable');
  });

  test('gives a tool whose name has no letters or digits a hash name', () => {
    assert.match(upstreamToolName('srv', '!!!'), /^srv_[0-9a-f]{8}$/);
  });

  test('keeps glob characters in permission patterns', () => {
    assert.equal(sanitizeGlob('create-*'), 'create_*');
    assert.equal(sanitizeGlob('Get?Issue'), 'get?issue');
  });

  test('finds names claimed by more than one origin, naming every origin', () => {
    const c = findCollisions([
      { name: 'a_b_c', origin: 'mcp:a' },
      { name: 'x', origin: 'mcp:x' },
      { name: 'a_b_c', origin: 'mcp:a_b' },
    ]);
    assert.deepEqual([...c], [['a_b_c', ['mcp:a', 'mcp:a_b']]]);
  });
});
