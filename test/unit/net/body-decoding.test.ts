import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { decodeBody, isTextualMediaType, parseContentType, readCapped } from '../../../src/net/body.js';
import { followRedirect, isCrossOrigin } from '../../../src/net/redirects.js';
import { trimIncompleteUtf8 } from '../../../src/shared/text.js';

describe('body decoding', () => {
  it('treats text, JSON, XML, JavaScript and form data as text, and images as binary', () => {
    for (const t of [
      'text/html',
      'application/json',
      'application/ld+json',
      'application/xml',
      'image/svg+xml',
      'application/javascript',
      'application/x-www-form-urlencoded',
    ]) {
      assert.equal(isTextualMediaType(t), true, t);
    }
    for (const t of ['image/png', 'application/octet-stream', 'application/pdf', 'application/zip']) {
      assert.equal(isTextualMediaType(t), false, t);
    }
  });

  it('parses the media type and a quoted charset case-insensitively', () => {
    assert.deepEqual(parseContentType('Text/HTML; Charset="UTF-8"'), {
      mediaType: 'text/html',
      charset: 'utf-8',
    });
    assert.deepEqual(parseContentType(undefined), {});
  });

  it('drops only an incomplete trailing UTF-8 sequence', () => {
    const euro = Buffer.from('a€', 'utf8'); // 61 e2 82 ac
    assert.deepEqual(trimIncompleteUtf8(euro), euro);
    assert.deepEqual(trimIncompleteUtf8(euro.subarray(0, 3)), Buffer.from('a'));
    assert.deepEqual(trimIncompleteUtf8(euro.subarray(0, 2)), Buffer.from('a'));
    const emoji = Buffer.from('😀', 'utf8');
    assert.deepEqual(trimIncompleteUtf8(emoji.subarray(0, 3)), Buffer.alloc(0));
  });

  it('keeps a truncated UTF-8 body as text and reports the bytes it carries', () => {
    const raw = Buffer.from('héllo', 'utf8').subarray(0, 2); // "h" + half of "é"
    assert.deepEqual(decodeBody(raw, 'text/plain', true), { body: 'h', encoding: 'utf8', bytes: 1 });
  });

  it('uses base64 for an unknown charset', () => {
    const out = decodeBody(Buffer.from('abc'), 'text/plain; charset=x-no-such-charset', false);
    assert.equal(out.encoding, 'base64');
  });
});

describe('capped reads', () => {
  it('stops at the cap even when one chunk is larger than the cap', async () => {
    const read = await readCapped(Readable.from([Buffer.alloc(10, 1), Buffer.alloc(10, 2)]), 15);
    assert.equal(read.truncated, true);
    assert.equal(read.buffer.length, 15);
    assert.equal(read.buffer[14], 2);
  });

  it('flags a declared length over the cap as soon as the cap is filled', async () => {
    const read = await readCapped(Readable.from([Buffer.alloc(8)]), 8, 9);
    assert.equal(read.truncated, true);
  });

  it('rejects when the stream fails', async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error('boom'));
      },
    });
    await assert.rejects(readCapped(failing, 10), /boom/);
  });
});

describe('redirect rules', () => {
  const url = new URL('https://api.example.com/a');
  const base = {
    method: 'POST',
    url,
    headers: { authorization: 'x', 'content-type': 'text/plain', accept: '*/*' },
    body: Buffer.from('b'),
  };

  it('keeps HEAD as HEAD after 303', () => {
    const next = followRedirect({ ...base, method: 'HEAD' }, 303, new URL('/b', url));
    assert.equal(next.method, 'HEAD');
  });

  it('turns PUT into GET after 303 but keeps it after 301', () => {
    assert.equal(followRedirect({ ...base, method: 'PUT' }, 303, new URL('/b', url)).method, 'GET');
    assert.equal(followRedirect({ ...base, method: 'PUT' }, 301, new URL('/b', url)).method, 'PUT');
  });

  it('treats a scheme change, a host change and a port change as another origin', () => {
    assert.equal(isCrossOrigin(url, new URL('http://api.example.com/a')), true);
    assert.equal(isCrossOrigin(url, new URL('https://www.example.com/a')), true);
    assert.equal(isCrossOrigin(url, new URL('https://api.example.com:8443/a')), true);
    assert.equal(isCrossOrigin(url, new URL('https://api.example.com:443/b?q')), false);
  });

  it('drops credentials on a downgrade to http on the same host', () => {
    const next = followRedirect(base, 308, new URL('http://api.example.com/a'));
    assert.equal(next.headers.authorization, undefined);
    assert.equal(next.headers.accept, '*/*');
    assert.deepEqual(next.body, Buffer.from('b'));
  });
});
