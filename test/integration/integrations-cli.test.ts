import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  parseToolCall,
  renderError,
  renderToolResult,
  serverLogs,
  serversList,
  serverTools,
} from '../../src/cli/format/servers.js';
import type { McpServerConfig } from '../../src/integrations/load-config.js';
import { IntegrationsService } from '../../src/integrations/service.js';
import { PaddockError } from '../../src/shared/errors.js';
import { silentLogger } from '../../src/shared/logger.js';
import { fixturePath } from '../fixtures/mcp/harness.js';

const fx: McpServerConfig = {
  name: 'fx',
  prefix: 'fx',
  transport: 'stdio',
  command: process.execPath,
  args: [fixturePath('stdio-server'), '--mode', 'normal'],
  env: {},
  enabled: true,
  timeoutMs: 5000,
  permissions: {},
  toolsets: [],
  startup: 'lazy',
};

describe('paddock servers …', () => {
  let service: IntegrationsService;
  before(() => {
    service = new IntegrationsService({
      servers: [fx, { ...fx, name: 'off', prefix: 'off', enabled: false }],
      logger: silentLogger(),
    });
  });
  after(() => service.close());

  test('tools <server> starts a lazy server that was never listed and shows its tools', async () => {
    const { data, text } = await serverTools(service, 'fx');
    assert.ok(data.some((t) => t.name === 'fx_echo' && t.upstreamName === 'echo'));
    assert.match(text, /^TOOL\s+UPSTREAM NAME\s+HASH\s+DESCRIPTION\n/);
    const echo = data.find((t) => t.name === 'fx_echo');
    assert.match(echo?.hash ?? '', /^[0-9a-f]{64}$/, 'the hash that `pins:` in mcp_servers.yaml takes');
    assert.match(text, new RegExp(`fx_echo\\s+echo\\s+${echo?.hash?.slice(0, 16)}\\s+Fixture tool echo\\.`));
  });

  test('tools <server> warns about permissions that name a tool the server no longer serves', async () => {
    const renamed = new IntegrationsService({
      servers: [{ ...fx, permissions: { echo: 'auto', get_pull_request: 'auto', 'ech*': 'auto' } }],
      logger: silentLogger(),
    });
    try {
      const { text } = await serverTools(renamed, 'fx');
      assert.match(
        text,
        /warning: permissions in mcp_servers\.yaml name tools "fx" does not serve: get_pull_request\./,
      );
      const clean = await serverTools(service, 'fx');
      assert.doesNotMatch(clean.text, /warning/);
    } finally {
      await renamed.close();
    }
  });

  test('tools <server> refuses a disabled or unknown server', async () => {
    await assert.rejects(
      serverTools(service, 'off'),
      (e: unknown) => e instanceof PaddockError && e.code === 'NOT_RUNNING',
    );
    await assert.rejects(
      serverTools(service, 'nope'),
      (e: unknown) => e instanceof PaddockError && e.code === 'NOT_FOUND',
    );
  });

  test('list shows every server with its state and tool count', () => {
    const { data, text } = serversList(service);
    assert.deepEqual(
      data.servers.map((s) => [s.name, s.state]),
      [
        ['fx', 'idle'],
        ['off', 'disabled'],
      ],
    );
    assert.match(text, /^SERVER\s+TRANSPORT\s+STARTUP\s+STATE\s+TOOLS\s+RESTARTS\s+LAST ERROR\n/);
    assert.match(text, /\nfx\s+stdio\s+lazy\s+idle\s+9\s+0\n/);
  });

  test('logs <server> shows its stderr lines', () => {
    assert.match(serverLogs(service, 'fx').text, /fixture server started in normal mode/);
  });

  test('call parses its JSON argument and refuses anything but an object', () => {
    assert.deepEqual(parseToolCall('fx_echo', '{"message":"hi"}'), {
      name: 'fx_echo',
      input: { message: 'hi' },
    });
    assert.deepEqual(parseToolCall('fx_echo', undefined), { name: 'fx_echo', input: {} });
    assert.throws(() => parseToolCall('fx_echo', '{oops'), /not valid JSON/);
    assert.throws(() => parseToolCall('fx_echo', '[1]'), /must be a JSON object/);
  });

  test('renders results and errors for people', () => {
    assert.equal(renderToolResult({ content: [{ type: 'text', text: 'hello' }] }), 'hello');
    assert.equal(renderToolResult({ structured: { a: 1 }, content: [] }), '{\n  "a": 1\n}');
    assert.equal(
      renderToolResult({ content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }], isError: true }),
      'The tool reported an error:\n[image image/png 3 bytes]',
    );
    assert.equal(renderError(new PaddockError('UPSTREAM_ERROR', 'down')), 'UPSTREAM_ERROR: down');
  });
});
