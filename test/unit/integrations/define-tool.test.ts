import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { defineTool, isPluginTool, toolResult } from '../../../src/integrations/define-tool.js';
import { PaddockError } from '../../../src/shared/errors.js';
import { toolContext } from '../../fixtures/mcp/harness.js';

describe('defineTool', () => {
  const greet = defineTool({
    name: 'greet',
    description: 'Greets someone.',
    input: z.object({
      name: z.string().describe('Who'),
      times: z.number().int().default(1),
      tags: z.object({ a: z.string() }).optional(),
    }),
    annotations: { readOnlyHint: true },
    execute: ({ name, times }) => Array.from({ length: times }, () => `hi ${name}`).join(' '),
  });

  test('turns the zod input into a draft-07 JSON Schema that refuses unknown properties', () => {
    assert.ok(isPluginTool(greet));
    assert.equal(greet.inputSchema.$schema, undefined);
    assert.equal(greet.inputSchema.type, 'object');
    assert.equal(greet.inputSchema.additionalProperties, false);
    assert.deepEqual(greet.inputSchema.required, ['name'], 'a field with a default is optional for callers');
    const tags = (greet.inputSchema.properties as Record<string, Record<string, unknown>>).tags;
    assert.equal(tags?.additionalProperties, false, 'nested objects are closed too');
    assert.deepEqual(greet.annotations, { readOnlyHint: true });
  });

  test('runs with the parsed input (defaults applied) and turns a string into text content', async () => {
    const ctx = toolContext();
    try {
      assert.deepEqual(await greet.run({ name: 'Ada' }, ctx), {
        content: [{ type: 'text', text: 'hi Ada' }],
      });
      assert.deepEqual(await greet.run({ name: 'Ada', times: 2 }, ctx), {
        content: [{ type: 'text', text: 'hi Ada hi Ada' }],
      });
    } finally {
      ctx.dispose();
    }
  });

  test('rejects input the zod schema refuses with INVALID_ARGUMENT naming the field', async () => {
    const ctx = toolContext();
    try {
      await assert.rejects(
        greet.run({ name: 3 }, ctx),
        (e: unknown) =>
          e instanceof PaddockError && e.code === 'INVALID_ARGUMENT' && /name: /.test(e.message),
      );
    } finally {
      ctx.dispose();
    }
  });

  test('returns an object as structured content and checks it against the output schema', async () => {
    const sum = defineTool({
      name: 'sum',
      description: 'Adds.',
      input: z.object({ a: z.number(), b: z.number() }),
      output: z.object({ total: z.number() }),
      execute: ({ a, b }) => ({ total: a + b }),
    });
    const wrong = defineTool({
      name: 'wrong',
      description: 'Returns the wrong shape.',
      input: z.object({}),
      output: z.object({ total: z.number() }),
      execute: () => ({ total: 'many' }) as unknown as { total: number },
    });
    assert.ok(sum.outputSchema);
    const ctx = toolContext();
    try {
      assert.deepEqual(await sum.run({ a: 1, b: 2 }, ctx), { structured: { total: 3 } });
      await assert.rejects(wrong.run({}, ctx), /does not match its output schema/);
    } finally {
      ctx.dispose();
    }
  });

  test('passes a full result made with toolResult through', async () => {
    const t = defineTool({
      name: 'img',
      description: 'An image.',
      input: z.object({}),
      execute: () =>
        toolResult({ content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }], isError: true }),
    });
    const ctx = toolContext();
    try {
      assert.deepEqual(await t.run({}, ctx), {
        content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }],
        isError: true,
      });
    } finally {
      ctx.dispose();
    }
  });

  test('refuses an invalid name, a missing description and a non-object input at definition', () => {
    const execute = () => 'x';
    assert.throws(
      () => defineTool({ name: 'Bad-Name', description: 'd', input: z.object({}), execute }),
      /name "Bad-Name" is invalid/,
    );
    assert.throws(
      () => defineTool({ name: 'ok', description: ' ', input: z.object({}), execute }),
      /give a description/,
    );
    assert.throws(
      () =>
        defineTool({ name: 'ok', description: 'd', input: z.string() as unknown as z.ZodObject, execute }),
      /input must be a zod object/,
    );
  });
});
