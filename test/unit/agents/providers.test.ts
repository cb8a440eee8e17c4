import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  createAnthropicProvider,
  createOpenAiProvider,
  createProvider,
  type ModelMessage,
  type ModelProvider,
  providerConfigs,
  resolveApiKey,
  retryAfterMs,
} from '../../../src/agents/providers/index.js';
import { agentsConfigSchema } from '../../../src/config/agents-schema.js';
import { PaddockError } from '../../../src/shared/errors.js';
import { type ScriptedProvider, startScriptedProvider } from '../../fixtures/providers/scripted-provider.js';

const TOOLS = [
  {
    name: 'save_memory',
    description: 'Save a note.',
    inputSchema: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] },
  },
];

const HISTORY: ModelMessage[] = [
  { role: 'user', text: 'Go.' },
  {
    role: 'assistant',
    text: 'Saving.',
    toolCalls: [{ id: 'c1', name: 'save_memory', input: { content: 'x' } }],
  },
  {
    role: 'tool',
    results: [{ callId: 'c1', name: 'save_memory', text: '{"code":"LIMIT_EXCEEDED"}', isError: true }],
  },
];

/** A request body as the test reads it (nested JSON). */
// biome-ignore lint/suspicious/noExplicitAny: arbitrary JSON read by assertions
type Body = Record<string, any>;

const common = { headers: {}, timeoutMs: 5000, maxRetries: 0, keyHint: 'check TEST_KEY' };

describe('model providers over HTTP', () => {
  let server: ScriptedProvider;
  let openai: ModelProvider;
  let anthropic: ModelProvider;
  const signal = () => new AbortController().signal;

  before(async () => {
    server = await startScriptedProvider({ apiKey: 'k' });
    openai = createOpenAiProvider({
      ...common,
      name: 'oa',
      model: 'gpt-x',
      baseUrl: `${server.openaiBaseUrl}/`,
      apiKey: 'k',
    });
    anthropic = createAnthropicProvider({
      ...common,
      name: 'an',
      model: 'claude-x',
      baseUrl: server.url,
      apiKey: 'k',
      maxOutputTokens: 4096,
    });
  });
  after(() => server?.close());

  it('sends OpenAI chat completions: system first, tools as functions, history with tool_calls and tool messages', async () => {
    server.script([{ text: 'done', usage: { input: 11, output: 3 } }]);
    const r = await openai.complete({
      system: 'Be brief.',
      messages: HISTORY,
      tools: TOOLS,
      signal: signal(),
    });
    assert.deepEqual(r, {
      text: 'done',
      toolCalls: [],
      usage: { inputTokens: 11, outputTokens: 3 },
      stopReason: 'stop',
    });
    const body = server.requests.at(-1)!.body as Body;
    assert.equal(body.model, 'gpt-x');
    assert.deepEqual(body.messages[0], { role: 'system', content: 'Be brief.' });
    assert.deepEqual(body.messages[2], {
      role: 'assistant',
      content: 'Saving.',
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'save_memory', arguments: '{"content":"x"}' } },
      ],
    });
    assert.deepEqual(body.messages[3], {
      role: 'tool',
      tool_call_id: 'c1',
      content: '{"code":"LIMIT_EXCEEDED"}',
    });
    assert.deepEqual(body.tools, [
      {
        type: 'function',
        function: { name: 'save_memory', description: 'Save a note.', parameters: TOOLS[0]!.inputSchema },
      },
    ]);
    assert.equal(body.tool_choice, 'auto');
    assert.equal('max_completion_tokens' in body, false);
  });

  it('omits tools when there are none and parses tool calls with their ids', async () => {
    server.script([{ toolCalls: [{ id: 'x1', name: 'save_memory', arguments: { content: 'hi' } }] }]);
    const r = await openai.complete({
      system: 's',
      messages: [{ role: 'user', text: 'u' }],
      tools: [],
      signal: signal(),
    });
    assert.deepEqual(r.toolCalls, [{ id: 'x1', name: 'save_memory', input: { content: 'hi' } }]);
    assert.equal('tools' in server.requests.at(-1)!.body, false);
  });

  it('sends Anthropic messages: version header, max_tokens, tool_use in history and tool_result with is_error', async () => {
    server.script([
      { text: 'ok', toolCalls: [{ id: 't9', name: 'save_memory', arguments: { content: 'y' } }] },
    ]);
    const r = await anthropic.complete({
      system: 'Be brief.',
      messages: HISTORY,
      tools: TOOLS,
      signal: signal(),
    });
    assert.equal(r.text, 'ok');
    assert.deepEqual(r.toolCalls, [{ id: 't9', name: 'save_memory', input: { content: 'y' } }]);
    assert.equal(r.stopReason, 'tool_use');
    const seen = server.requests.at(-1)!;
    assert.equal(seen.headers['anthropic-version'], '2023-06-01');
    const body = seen.body as Body;
    assert.equal(body.max_tokens, 4096);
    assert.equal(body.system, 'Be brief.');
    assert.deepEqual(body.messages[1].content, [
      { type: 'text', text: 'Saving.' },
      { type: 'tool_use', id: 'c1', name: 'save_memory', input: { content: 'x' } },
    ]);
    assert.deepEqual(body.messages[2], {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'c1', content: '{"code":"LIMIT_EXCEEDED"}', is_error: true },
      ],
    });
    assert.deepEqual(body.tools, [
      { name: 'save_memory', description: 'Save a note.', input_schema: TOOLS[0]!.inputSchema },
    ]);
  });

  it('rejects malformed tool calls and responses with UPSTREAM_ERROR saying what was wrong', async () => {
    const cases: [ModelProvider, unknown, RegExp][] = [
      [openai, { choices: [{ message: { tool_calls: { not: 'a list' } } }] }, /tool_calls is not a list/],
      [
        openai,
        { choices: [{ message: { tool_calls: [{ id: 'a', function: { name: 'f', arguments: '[1]' } }] } }] },
        /arguments of "f" are not a JSON object/,
      ],
      [
        openai,
        { choices: [{ message: { tool_calls: [{ id: 'a', function: { arguments: '{}' } }] } }] },
        /without a tool name/,
      ],
      [
        openai,
        {
          choices: [
            {
              message: {
                tool_calls: [1, 2].map(() => ({ id: 'same', function: { name: 'f', arguments: '{}' } })),
              },
            },
          ],
        },
        /share the id "same"/,
      ],
      [openai, { nope: true }, /cannot read \(no choices\[0\]\.message\)/],
      [
        anthropic,
        { content: [{ type: 'tool_use', id: 'a', name: 'f', input: 'text' }] },
        /input of "f" is not a JSON object/,
      ],
      [anthropic, { content: 'text' }, /no content list/],
    ];
    for (const [provider, body, message] of cases) {
      server.script([{ body }]);
      await assert.rejects(
        provider.complete({
          system: 's',
          messages: [{ role: 'user', text: 'u' }],
          tools: [],
          signal: signal(),
        }),
        (e: unknown) => e instanceof PaddockError && e.code === 'UPSTREAM_ERROR' && message.test(e.message),
        String(message),
      );
    }
  });

  it('passes the provider message of a 4xx on without retrying, and a 401 as a key problem', async () => {
    const retrying = createOpenAiProvider({
      ...common,
      name: 'oa',
      model: 'm',
      baseUrl: server.openaiBaseUrl,
      apiKey: 'k',
      maxRetries: 3,
    });
    const before = server.requests.length;
    server.script([{ status: 400 }]);
    await assert.rejects(
      retrying.complete({ system: 's', messages: [], tools: [], signal: signal() }),
      /HTTP 400: scripted 400\. Check the model name/,
    );
    assert.equal(server.requests.length, before + 1);
    const wrongKey = createOpenAiProvider({
      ...common,
      name: 'oa',
      model: 'm',
      baseUrl: server.openaiBaseUrl,
      apiKey: 'bad',
      maxRetries: 3,
    });
    await assert.rejects(
      wrongKey.complete({ system: 's', messages: [], tools: [], signal: signal() }),
      /rejected the API key \(HTTP 401: invalid x-api-key\); check TEST_KEY/,
    );
    assert.equal(server.requests.length, before + 2);
  });

  it('retries a dropped connection with backoff, then reports that the provider could not be reached', async () => {
    const retries: number[] = [];
    const port = await freePort();
    const closed = createOpenAiProvider({
      ...common,
      name: 'down',
      model: 'm',
      baseUrl: `http://127.0.0.1:${port}/v1`,
      maxRetries: 2,
      onRetry: (info) => retries.push(info.attempt),
    });
    await assert.rejects(
      closed.complete({ system: 's', messages: [], tools: [], signal: signal() }),
      /"down" could not be reached at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
    );
    assert.deepEqual(retries, [1, 2]);
  });

  it('rethrows the run signal reason as soon as the run ends, also during a slow answer', async () => {
    server.script([{ delayMs: 10_000, text: 'late' }]);
    const controller = new AbortController();
    const reason = new PaddockError('LIMIT_EXCEEDED', 'wall time');
    const pending = openai.complete({ system: 's', messages: [], tools: [], signal: controller.signal });
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(pending, (e: unknown) => e === reason);
  });

  it('reads retry-after as seconds or an HTTP date, capped at a minute', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    assert.equal(retryAfterMs('2', now), 2000);
    assert.equal(retryAfterMs('Wed, 01 Jan 2025 00:00:05 GMT', now), 5000);
    assert.equal(retryAfterMs('3600', now), 60_000);
    assert.equal(retryAfterMs('soon', now), undefined);
    assert.equal(retryAfterMs(null, now), undefined);
  });
});

describe('provider keys', () => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-keys-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const configs = providerConfigs(
    agentsConfigSchema.parse({
      providers: {
        local: { type: 'openai', baseUrl: 'http://127.0.0.1:1/v1', keyRequired: false, model: 'm' },
      },
    }),
  );

  it('takes the key from the environment first, then from <dataDir>/keys/<provider>', () => {
    const anthropic = configs.get('anthropic')!;
    assert.equal(resolveApiKey('anthropic', anthropic, { env: {}, dataDir: dir }).source, 'none');
    mkdirSync(join(dir, 'keys'), { recursive: true });
    writeFileSync(join(dir, 'keys', 'anthropic'), '  from-file\n', { mode: 0o600 });
    assert.deepEqual(
      { ...resolveApiKey('anthropic', anthropic, { env: {}, dataDir: dir }), hint: '' },
      { key: 'from-file', source: 'file', hint: '' },
    );
    assert.equal(
      resolveApiKey('anthropic', anthropic, { env: { ANTHROPIC_API_KEY: 'from-env' }, dataDir: dir }).key,
      'from-env',
    );
  });

  it('fails clearly without a required key, and builds a keyless local provider', () => {
    assert.throws(
      () => createProvider('openai', 'm', configs, { env: {}, dataDir: dir }),
      (e: unknown) =>
        e instanceof PaddockError &&
        /has no API key: set OPENAI_API_KEY or write the key to .*keys\/openai/.test(e.message),
    );
    assert.equal(createProvider('local', 'm', configs, { env: {}, dataDir: dir }).type, 'openai');
    assert.throws(
      () => createProvider('nope', 'm', configs, { env: {}, dataDir: dir }),
      /no provider "nope"/,
    );
  });
});

/** A port nothing listens on (bound once, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
