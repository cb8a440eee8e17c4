import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { declareTool } from '../../../src/tools/define.js';
import { type Infer, s } from '../../../src/tools/schema.js';
import type { ToolContext } from '../../../src/tools/tool.js';

/** Compile-time check: `T` and `U` are the same type. */
type Equal<T, U> = (<V>() => V extends T ? 1 : 2) extends <V>() => V extends U ? 1 : 2 ? true : false;
function assertType<_T extends true>(): void {}

describe('tool schema builders', () => {
  it('write the JSON Schema exactly as given: type first, then the options in the order written', () => {
    const url = s.string({ minLength: 8, maxLength: 10, pattern: '^h', description: 'd' });
    assert.equal(
      JSON.stringify(url),
      '{"type":"string","minLength":8,"maxLength":10,"pattern":"^h","description":"d"}',
    );
    assert.equal(
      JSON.stringify(s.array({ maxItems: 2, items: s.integer({ minimum: 1 }), description: 'd' })),
      '{"type":"array","maxItems":2,"items":{"type":"integer","minimum":1},"description":"d"}',
    );
    assert.equal(
      JSON.stringify(s.object({ a: s.boolean() }, { required: ['a'], additionalProperties: false })),
      '{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"],"additionalProperties":false}',
    );
    assert.equal(
      JSON.stringify(s.record(s.number({ maximum: 3 }), { description: 'd' })),
      '{"type":"object","description":"d","additionalProperties":{"type":"number","maximum":3}}',
    );
    assert.equal(
      JSON.stringify(s.enum(['x', 'y'], { description: 'd' })),
      '{"type":"string","enum":["x","y"],"description":"d"}',
    );
    assert.equal(JSON.stringify(s.object({})), '{"type":"object","properties":{}}');
    const foreign = { type: 'object', properties: { q: { $ref: '#/$defs/q' } } };
    assert.equal(s.json(foreign), foreign);
  });

  it('infer the input type: required keys present, the others optional, items and enums typed', () => {
    const input = s.object(
      {
        path: s.string(),
        limit: s.integer({ default: 5 }),
        tags: s.array({ items: s.string() }),
        mode: s.enum(['utf8', 'base64']),
        env: s.record(s.string()),
        pair: s.object({ name: s.string() }, { required: ['name'] }),
        raw: s.json({}),
      },
      { required: ['path', 'mode'], additionalProperties: false },
    );
    assertType<
      Equal<
        Infer<typeof input>,
        {
          path: string;
          mode: 'utf8' | 'base64';
          limit?: number;
          tags?: string[];
          env?: Record<string, string>;
          pair?: { name: string };
          raw?: unknown;
        }
      >
    >();
    // @ts-expect-error a required key that is not a property
    s.object({ a: s.string() }, { required: ['b'] });
  });

  it('declareTool lists the input schema as the same object and hands execute the input it was called with', async () => {
    const input = s.object({ n: s.integer() }, { required: ['n'], additionalProperties: false });
    const seen: number[] = [];
    const tool = declareTool({
      name: 'double',
      description: 'Doubles n.',
      input,
      annotations: { readOnlyHint: true },
      source: 'builtin',
      toolsets: ['builtin'],
      async execute({ n }) {
        seen.push(n);
        return { structured: { doubled: n * 2 } };
      },
    });
    assert.equal(tool.inputSchema, input);
    assert.equal('title' in tool, false);
    assert.equal('outputSchema' in tool, false);
    const result = await tool.execute({ n: 21 }, {} as ToolContext);
    assert.deepEqual(result, { structured: { doubled: 42 } });
    assert.deepEqual(seen, [21]);
  });
});
