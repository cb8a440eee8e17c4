import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { STRUCTURED_INLINE_MAX_BYTES, toCallToolResult } from '../../../src/mcp/server.js';

describe('MCP rendering of tool results', () => {
  it('sends a small structured result as structuredContent plus the same JSON as text', () => {
    const r = toCallToolResult({ structured: { a: 1 } });
    assert.deepEqual(r.structuredContent, { a: 1 });
    assert.deepEqual(r.content, [{ type: 'text', text: '{"a":1}' }]);
  });

  it('sends a large structured result once, as its JSON text', () => {
    const big = { content: 'x'.repeat(STRUCTURED_INLINE_MAX_BYTES + 1) };
    const r = toCallToolResult({ structured: big });
    assert.equal(r.structuredContent, undefined);
    assert.deepEqual(JSON.parse((r.content as { text: string }[])[0]!.text), big);
  });

  it('always sends structuredContent for a tool that declares an outputSchema', () => {
    const big = { content: 'x'.repeat(STRUCTURED_INLINE_MAX_BYTES + 1) };
    const r = toCallToolResult({ structured: big }, { outputSchema: { type: 'object' } });
    assert.deepEqual(r.structuredContent, big);
  });

  it('passes upstream content and isError through unchanged', () => {
    const r = toCallToolResult({ content: [{ type: 'text', text: 'boom' }], isError: true });
    assert.deepEqual(r, { content: [{ type: 'text', text: 'boom' }], isError: true });
  });
});
