import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { callError, toToolResult } from '../../../src/integrations/upstream-result.js';
import { PaddockError } from '../../../src/shared/errors.js';

const ctx = {
  server: 'srv',
  tool: 'do_it',
  deadlineReached: false,
  cancelledByCaller: false,
  timeoutMs: 1500,
};

describe('toToolResult', () => {
  test('maps structuredContent to structured and keeps content and isError', () => {
    assert.deepEqual(
      toToolResult('srv', 't', {
        content: [{ type: 'text', text: 'x' }],
        structuredContent: { a: 1 },
        isError: true,
      }),
      { content: [{ type: 'text', text: 'x' }], structured: { a: 1 }, isError: true },
    );
  });

  test('passes content blocks of every type through unchanged', () => {
    const blocks = [
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      { type: 'resource_link', uri: 'file:///x', name: 'x' },
    ];
    assert.deepEqual(toToolResult('srv', 't', { content: blocks }), { content: blocks });
  });

  test('keeps a non-object structuredContent as JSON text when there is no content', () => {
    assert.deepEqual(toToolResult('srv', 't', { structuredContent: [1, 2] }), {
      content: [{ type: 'text', text: '[1,2]' }],
    });
  });

  test('turns malformed results into UPSTREAM_ERROR naming the server and tool', () => {
    for (const raw of [null, 'text', [], { content: 'x' }, { content: [{ text: 'no type' }] }]) {
      assert.throws(
        () => toToolResult('srv', 'tool_a', raw),
        (e: unknown) =>
          e instanceof PaddockError &&
          e.code === 'UPSTREAM_ERROR' &&
          e.message.includes('"srv"') &&
          e.message.includes('malformed result for tool "tool_a"'),
      );
    }
  });
});

describe('callError', () => {
  test('a request timeout is UPSTREAM_ERROR saying the deadline and that a cancellation was sent', () => {
    const e = callError(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'), {
      ...ctx,
      deadlineReached: true,
    });
    assert.equal(e.code, 'UPSTREAM_ERROR');
    assert.match(e.message, /did not answer tool "do_it" within 1500 ms.*sent a cancellation/);
  });

  test('a cancellation by the caller before the deadline is TIMEOUT, not an upstream fault', () => {
    const e = callError(new SdkError(SdkErrorCode.RequestTimeout, 'aborted'), {
      ...ctx,
      cancelledByCaller: true,
    });
    assert.equal(e.code, 'TIMEOUT');
  });

  test('a closed connection is UPSTREAM_ERROR that says the server is restarted', () => {
    const e = callError(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'), ctx);
    assert.equal(e.code, 'UPSTREAM_ERROR');
    assert.match(e.message, /closed during tool "do_it".*retry the call/);
  });

  test('a reason recorded by Paddock (result over the cap) wins over the transport error', () => {
    const e = callError(new TypeError('terminated'), {
      ...ctx,
      closeReason: 'a message exceeded the 10 MiB result limit',
    });
    assert.match(e.message, /failed during tool "do_it": a message exceeded the 10 MiB result limit/);
  });

  test('an invalid result is reported as malformed with the failing path', () => {
    const sdk = new SdkError(
      SdkErrorCode.InvalidResult,
      'Invalid result for tools/call: [{"path":["content"],"message":"Invalid input: expected array, received string"}]',
    );
    assert.match(
      callError(sdk, ctx).message,
      /malformed result for tool "do_it" \(content: Invalid input: expected array/,
    );
  });

  test('a JSON-RPC error from the server is UPSTREAM_ERROR carrying its code', () => {
    const e = callError(new ProtocolError(-32602, 'MCP error -32602: bad params'), ctx);
    assert.equal(e.code, 'UPSTREAM_ERROR');
    assert.equal(e.details.upstreamCode, -32602);
  });

  test('a network error is UPSTREAM_ERROR saying the server could not be reached', () => {
    assert.match(callError(new TypeError('fetch failed'), ctx).message, /Could not reach MCP server "srv"/);
  });

  test('long upstream text is clipped so a server cannot flood our messages', () => {
    const e = callError(new ProtocolError(-32000, 'x'.repeat(5000)), ctx);
    assert.ok(e.message.length < 800);
  });
});
