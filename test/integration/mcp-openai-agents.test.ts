/**
 * The OpenAI Agents SDK as a real MCP client of `paddock serve`, its agent loop driven by a
 * scripted OpenAI-compatible model on loopback: the model must see what was wrong with its
 * arguments (a tool result, not a protocol error the SDK hides), and the built-ins' schemas
 * must pass the SDK's strict-mode conversion.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  Agent,
  MCPServerStreamableHttp,
  OpenAIChatCompletionsModel,
  run,
  setTracingDisabled,
} from '@openai/agents';
import OpenAI from 'openai';
import { type ScriptedProvider, startScriptedProvider } from '../fixtures/providers/scripted-provider.js';
import { type ServeProcess, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';

describe('the OpenAI Agents SDK against paddock serve', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let model: ScriptedProvider;
  let mcp: MCPServerStreamableHttp;
  const warnings: string[] = [];
  const originalWarn = console.warn;

  before(async () => {
    setTracingDisabled(true);
    console.warn = (...args: unknown[]) => warnings.push(args.map(String).join(' '));
    project = tempProject();
    serve = await startServe(project);
    model = await startScriptedProvider();
    mcp = new MCPServerStreamableHttp({
      name: 'paddock',
      url: `${serve.url}/mcp`,
      requestInit: { headers: { authorization: `bearer ${serve.token}` } },
    });
    await mcp.connect();
  });

  after(async () => {
    console.warn = originalWarn;
    await mcp?.close().catch(() => undefined);
    await model?.close();
    await serve?.stop();
    project?.cleanup();
  });

  it('shows the model the validation message of schema-invalid arguments, and the model corrects itself', async () => {
    model.script([
      { toolCalls: [{ id: 'c1', name: 'save_memory', arguments: { text: 'forgot the field name' } }] },
      { toolCalls: [{ id: 'c2', name: 'save_memory', arguments: { content: 'agents-sdk-marker' } }] },
      { text: 'Saved.' },
    ]);
    const agent = new Agent({
      name: 'memory-keeper',
      instructions: 'Save what the user asks you to remember.',
      mcpServers: [mcp],
      mcpConfig: { convertSchemasToStrict: true },
      model: new OpenAIChatCompletionsModel(
        new OpenAI({ baseURL: model.openaiBaseUrl, apiKey: 'test' }),
        'scripted',
      ),
    });
    const result = await run(agent, 'Remember: agents-sdk-marker');
    assert.equal(result.finalOutput, 'Saved.');
    const seen = model.requests[1]!.toolResults[0]!.content;
    assert.match(seen, /INVALID_ARGUMENT/);
    assert.match(seen, /must have required property 'content'/);
    assert.match(seen, /unknown property \\?"text\\?"/);
    assert.doesNotMatch(seen, /An error occurred while running the tool/);
    assert.doesNotMatch(model.requests[2]!.toolResults[0]!.content, /INVALID_ARGUMENT/);
  });

  it('converts every built-in schema to strict mode without falling back', async () => {
    const tools = model.requests[0]!.body.tools as { function: { name: string; strict?: boolean } }[];
    for (const name of ['http_get', 'http_post', 'notify', 'save_memory', 'recall_memory']) {
      const tool = tools.find((t) => t.function.name === name);
      assert.ok(tool, `${name} is offered`);
      assert.equal(tool.function.strict, true, `${name} is strict`);
    }
    for (const name of ['http_get', 'http_post', 'notify']) {
      assert.ok(!warnings.some((w) => w.includes(name)), warnings.join('\n'));
    }
  });
});
