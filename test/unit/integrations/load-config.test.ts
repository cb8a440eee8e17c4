// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about the literal ${VAR} syntax
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { loadMcpServers } from '../../../src/integrations/load-config.js';
import { PaddockError } from '../../../src/shared/errors.js';

let root: string;
let dir: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'paddock-mcpcfg-'));
  dir = join(root, '.paddock');
  mkdirSync(dir);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const write = (name: string, text: string) => writeFileSync(join(dir, name), text);

/** Loads and returns the INVALID_ARGUMENT error's problem lines (fails when it loads). */
function problems(env: NodeJS.ProcessEnv = {}): string[] {
  try {
    loadMcpServers(dir, env);
  } catch (e) {
    assert.ok(e instanceof PaddockError, `expected a PaddockError, got ${String(e)}`);
    assert.equal(e.code, 'INVALID_ARGUMENT');
    const lines = (e.details.problems as string[]) ?? [];
    for (const line of lines) assert.ok(e.message.includes(line), 'every problem is in the message');
    return lines;
  }
  assert.fail('expected the load to fail');
}

describe('loadMcpServers', () => {
  test('returns no servers when the directory has no mcp_servers file', () => {
    assert.deepEqual(loadMcpServers(dir, {}), { file: null, servers: [], warnings: [] });
  });

  test('accepts a Claude Desktop config file unchanged, other top-level keys included', () => {
    write(
      'mcp_servers.json',
      JSON.stringify({
        globalShortcut: 'Ctrl+Space',
        mcpServers: {
          filesystem: {
            command: 'npx',
            args: ['-y', '@modelcontextprotocol/server-filesystem', '/Users/me/Desktop'],
          },
          github: {
            command: 'docker',
            args: ['run', '-i', '--rm', 'ghcr.io/github/github-mcp-server'],
            env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'x' },
          },
        },
      }),
    );
    const { servers, warnings } = loadMcpServers(dir, {});
    assert.deepEqual(warnings, []);
    assert.deepEqual(
      servers.map((s) => [s.name, s.transport, s.enabled, s.startup, s.timeoutMs]),
      [
        ['filesystem', 'stdio', true, 'lazy', 10_000],
        ['github', 'stdio', true, 'lazy', 10_000],
      ],
    );
    const gh = servers[1];
    assert.ok(gh?.transport === 'stdio');
    assert.deepEqual(gh.env, { GITHUB_PERSONAL_ACCESS_TOKEN: 'x' });
  });

  test('accepts keys of other clients (Cline, Cursor) and honours disabled: true', () => {
    write(
      'mcp_servers.json',
      JSON.stringify({
        mcpServers: {
          a: { command: 'a', disabled: true, autoApprove: ['x'], timeout: 60 },
          b: { type: 'sse', url: 'https://example.com/sse' },
        },
      }),
    );
    const { servers } = loadMcpServers(dir, {});
    assert.equal(servers[0]?.enabled, false);
    assert.equal(servers[1]?.transport, 'sse');
  });

  test('reads the Claude Code HTTP shape and infers HTTP from url alone', () => {
    write(
      'mcp_servers.yaml',
      [
        'mcpServers:',
        '  linear:',
        '    type: http',
        '    url: ${LINEAR_URL:-https://mcp.linear.app/mcp}',
        '    headers:',
        '      Authorization: Bearer ${LINEAR_TOKEN}',
        '  other:',
        '    url: http://127.0.0.1:9/mcp',
        '    startup: eager',
        '    toolsets: [ops]',
        '    permissions:',
        '      "get_*": auto',
        '      delete_thing: deny',
      ].join('\n'),
    );
    const { servers } = loadMcpServers(dir, { LINEAR_TOKEN: 't0k' });
    const [linear, other] = servers;
    assert.ok(linear?.transport === 'http' && other?.transport === 'http');
    assert.equal(linear.url, 'https://mcp.linear.app/mcp');
    assert.deepEqual(linear.headers, { Authorization: 'Bearer t0k' });
    assert.equal(other.startup, 'eager');
    assert.deepEqual(other.toolsets, ['ops']);
    assert.deepEqual(other.permissions, { 'get_*': 'auto', delete_thing: 'deny' });
  });

  test('expands variables in command, args, env and cwd; resolves cwd against the project directory', () => {
    write(
      'mcp_servers.yaml',
      [
        'mcpServers:',
        '  tool:',
        '    command: ${BIN_DIR}/server',
        '    args: ["--root", "${ROOT:-/srv}", 42]',
        '    env: { API_KEY: "${KEY}", PORT: 3001 }',
        '    cwd: ${SUB:-work}',
      ].join('\n'),
    );
    const [s] = loadMcpServers(dir, { BIN_DIR: '/opt/bin', KEY: 'k' }).servers;
    assert.ok(s?.transport === 'stdio');
    assert.equal(s.command, '/opt/bin/server');
    assert.deepEqual(s.args, ['--root', '/srv', '42']);
    assert.deepEqual(s.env, { API_KEY: 'k', PORT: '3001' });
    assert.equal(s.cwd, join(root, 'work'));
  });

  test('names the server, the field and the variable when a variable is unset', () => {
    write(
      'mcp_servers.yaml',
      'mcpServers:\n  github:\n    command: gh-mcp\n    env:\n      TOKEN: ${GITHUB_TOKEN}\n',
    );
    const lines = problems();
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^mcpServers\.github\.env\.TOKEN: variable GITHUB_TOKEN is not set/);
  });

  test('does not require the variables of a disabled server', () => {
    write('mcp_servers.yaml', 'mcpServers:\n  off:\n    command: ${NOPE}\n    enabled: false\n');
    const [s] = loadMcpServers(dir, {}).servers;
    assert.equal(s?.enabled, false);
  });

  test('reports a YAML syntax error with its line and column', () => {
    write('mcp_servers.yaml', 'mcpServers:\n  a:\n    command: "unclosed\n    args: []\n');
    const lines = problems();
    assert.match(lines[0]!, /^line \d+, column \d+: /);
  });

  test('reports a JSON syntax error with its line and column', () => {
    write('mcp_servers.json', '{\n  "mcpServers": {\n    "a": { "command": "x", }\n  }\n}\n');
    const lines = problems();
    assert.match(lines[0]!, /^line 3, column \d+: /);
  });

  test('refuses to choose between mcp_servers.yaml and mcp_servers.json', () => {
    write('mcp_servers.yaml', 'mcpServers: {}\n');
    write('mcp_servers.json', '{"mcpServers": {}}');
    assert.match(problems()[0]!, /mcp_servers\.yaml and mcp_servers\.json; keep one/);
  });

  test('rejects a misspelt key of our own options and names the intended one', () => {
    write('mcp_servers.yaml', 'mcpServers:\n  a:\n    command: x\n    tiemoutMs: 5000\n    startp: eager\n');
    assert.deepEqual(problems(), [
      'mcpServers.a.tiemoutMs: unknown key (did you mean "timeoutMs"?)',
      'mcpServers.a.startp: unknown key (did you mean "startup"?)',
    ]);
  });

  test('accepts an unrelated extra key with a warning', () => {
    write('mcp_servers.yaml', 'mcpServers:\n  a:\n    command: x\n    vendorSpecificThing: 1\n');
    assert.deepEqual(loadMcpServers(dir, {}).warnings, [
      'mcpServers.a.vendorSpecificThing: ignored (not a key Paddock uses)',
    ]);
  });

  test('rejects a server without a command or url, naming the server', () => {
    write('mcp_servers.yaml', 'mcpServers:\n  broken:\n    args: [x]\n');
    assert.match(
      problems()[0]!,
      /^mcpServers\.broken\.command: missing; give command \(a stdio server\) or url/,
    );
  });

  test('rejects contradictory transports', () => {
    write(
      'mcp_servers.yaml',
      'mcpServers:\n  both:\n    command: x\n    url: http://h/mcp\n  s:\n    type: stdio\n    url: http://h/mcp\n  h:\n    type: http\n    command: x\n',
    );
    const lines = problems();
    assert.ok(lines.some((l) => l.startsWith('mcpServers.both: give either command')));
    assert.ok(lines.some((l) => l.startsWith('mcpServers.s.command: required for a stdio server')));
    assert.ok(lines.some((l) => l.startsWith('mcpServers.h.command: a http server has no command')));
  });

  test('lists every problem of the file, one path: message per line', () => {
    write(
      'mcp_servers.yaml',
      [
        'mcpServers:',
        '  a:',
        '    command: x',
        '    timeoutMs: fast',
        '    permissions: { "*": maybe }',
        '  b:',
        '    url: ftp://example.com',
        '    startup: sometimes',
      ].join('\n'),
    );
    const lines = problems();
    assert.ok(lines.some((l) => l.startsWith('mcpServers.a.timeoutMs: ')));
    assert.ok(lines.some((l) => l.startsWith('mcpServers.a.permissions.*: ')));
    assert.ok(lines.some((l) => l.startsWith('mcpServers.b.startup: ')));
    assert.ok(lines.length >= 3);
  });

  test('rejects a url that is not http(s) after expansion', () => {
    write('mcp_servers.yaml', 'mcpServers:\n  b:\n    url: ${U}\n');
    assert.match(problems({ U: 'ftp://x' })[0]!, /^mcpServers\.b\.url: "ftp:\/\/x" is not an http/);
  });

  test('rejects two servers whose tool prefixes would collide, naming both', () => {
    write('mcp_servers.yaml', 'mcpServers:\n  my-server:\n    command: a\n  My_Server:\n    command: b\n');
    assert.match(
      problems()[0]!,
      /servers "my-server" and "My_Server" would both name their tools "my_server_…"/,
    );
  });

  test('requires the top-level mcpServers map and points out a misspelling of it', () => {
    write('mcp_servers.yaml', 'mcpservers:\n  a:\n    command: x\n');
    const lines = problems();
    assert.ok(lines.includes('mcpservers: unknown key (did you mean "mcpServers"?)'));
    assert.ok(lines.some((l) => l.startsWith('mcpServers: ')));
  });

  test('rejects an empty file: the mcpServers map is required', () => {
    write('mcp_servers.yaml', '');
    assert.throws(() => loadMcpServers(dir, {}), /mcpServers/);
  });
});
