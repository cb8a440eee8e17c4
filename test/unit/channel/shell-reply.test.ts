import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeShellReply } from '../../../src/channel/wire.js';

/** Splits a shell reply line the way the sh client's `read -r status a b` does. */
function parse(line: string): { status: string; a: string; b: string | undefined } {
  assert.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'), 'one line');
  const [status = '', a = '', b] = line.slice(0, -1).split(' ');
  return { status, a, b };
}
const decode = (s: string) => Buffer.from(s, 'base64').toString('utf8');

describe('the shell form of tool channel replies', () => {
  it('prints a structured result as pretty JSON, else the text parsed as JSON, else the text as a JSON string', () => {
    const structured = parse(
      encodeShellReply({
        id: 'sh-1',
        ok: true,
        result: { structured: { n: 1 }, content: null, isError: false },
      }),
    );
    assert.equal(structured.status, 'ok');
    assert.equal(decode(structured.a), '{\n  "n": 1\n}\n');
    const text = (t: string) =>
      decode(
        parse(
          encodeShellReply({
            id: 'sh-2',
            ok: true,
            result: { structured: null, content: [{ type: 'text', text: t }], isError: false },
          }),
        ).a,
      );
    assert.equal(text('[1,2]'), '[\n  1,\n  2\n]\n');
    assert.equal(text('line one\nline "two"'), '"line one\\nline \\"two\\""\n');
  });

  it('lists tools as the array a list request returns', () => {
    const r = parse(encodeShellReply({ id: 'sh-3', ok: true, result: { tools: [{ name: 'noop' }] } }));
    assert.deepEqual(JSON.parse(decode(r.a)), [{ name: 'noop' }]);
  });

  it('keeps the error code readable and the message, spaces and newlines included, in one field', () => {
    const r = parse(
      encodeShellReply({
        id: 'sh-4',
        ok: false,
        error: { code: 'POLICY_DENIED', message: 'no.\nRead the rule' },
      }),
    );
    assert.equal(r.status, 'err');
    assert.equal(r.a, 'POLICY_DENIED');
    assert.equal(decode(r.b!), 'no.\nRead the rule');
    const upstream = parse(
      encodeShellReply({
        id: 'sh-5',
        ok: true,
        result: { structured: null, content: [{ type: 'text', text: 'boom' }], isError: true },
      }),
    );
    assert.deepEqual([upstream.status, upstream.a, decode(upstream.b!)], ['err', 'UPSTREAM_ERROR', 'boom']);
  });
});
