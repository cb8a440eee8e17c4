import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeRequest, encodeShellReply } from '../../../src/channel/wire.js';

/** Reads a shell reply the way the sh client does: `read -r status a b`, then `lines` lines. */
function parse(reply: string): { status: string; a: string; text: string } {
  const nl = reply.indexOf('\n');
  const [status = '', a = '', b = ''] = reply.slice(0, nl).split(' ');
  const text = reply.slice(nl + 1);
  const lines = Number(b);
  assert.equal(text.split('\n').length - 1, lines, 'the header counts the lines that follow');
  assert.ok(text.endsWith('\n'), 'the text ends with a newline');
  if (status === 'ok') assert.equal(Buffer.byteLength(text), Number(a), 'the header counts the bytes');
  return { status, a, text };
}

describe('the shell form of tool channel replies', () => {
  it('prints a structured result as pretty JSON, else the text parsed as JSON, else the text as a JSON string', () => {
    const structured = parse(
      encodeShellReply({
        id: 'sh-1',
        ok: true,
        result: { structured: { n: 'é' }, content: null, isError: false },
      }),
    );
    assert.equal(structured.status, 'ok');
    assert.equal(structured.text, '{\n  "n": "é"\n}\n');
    const text = (t: string) =>
      parse(
        encodeShellReply({
          id: 'sh-2',
          ok: true,
          result: { structured: null, content: [{ type: 'text', text: t }], isError: false },
        }),
      ).text;
    assert.equal(text('[1,2]'), '[\n  1,\n  2\n]\n');
    assert.equal(text('line one\nline "two"'), '"line one\\nline \\"two\\""\n');
  });

  it('lists tools as the array a list request returns', () => {
    const r = parse(encodeShellReply({ id: 'sh-3', ok: true, result: { tools: [{ name: 'noop' }] } }));
    assert.deepEqual(JSON.parse(r.text), [{ name: 'noop' }]);
  });

  it('keeps the error code readable and the message, spaces and newlines included, after it', () => {
    const r = parse(
      encodeShellReply({
        id: 'sh-4',
        ok: false,
        error: { code: 'POLICY_DENIED', message: 'no.\nRead the rule' },
      }),
    );
    assert.deepEqual([r.status, r.a, r.text], ['err', 'POLICY_DENIED', 'no.\nRead the rule\n']);
    const upstream = parse(
      encodeShellReply({
        id: 'sh-5',
        ok: true,
        result: { structured: null, content: [{ type: 'text', text: 'boom' }], isError: true },
      }),
    );
    assert.deepEqual([upstream.status, upstream.a, upstream.text], ['err', 'UPSTREAM_ERROR', 'boom\n']);
  });

  it('reads a request payload that is the JSON itself as well as base64url', () => {
    const request = { v: 1, op: 'call', name: 'x', args: { t: 'été' } } as const;
    const json = Buffer.from(JSON.stringify(request)).toString('latin1');
    assert.deepEqual(decodeRequest(json), request);
    assert.deepEqual(decodeRequest(Buffer.from(JSON.stringify(request)).toString('base64url')), request);
    assert.throws(() => decodeRequest('{"v":1,'), /neither JSON nor base64url-encoded JSON/);
  });
});
