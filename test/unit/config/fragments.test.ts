import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { z } from 'zod';
import { providerSchema } from '../../../src/config/agents-schema.js';
import { HEADER_NAME, HEADER_NAME_PATTERN, httpUrl } from '../../../src/config/fragments.js';
import { notifySchema } from '../../../src/config/notify-schema.js';

/** `path: message` lines of a failed parse; empty when it passes. */
function problems(schema: z.ZodType, input: unknown): string[] {
  const result = schema.safeParse(input);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

const webhook = (url: string, headers?: Record<string, string>) => ({
  channels: { team: { type: 'webhook', url, ...(headers ? { headers } : {}) } },
});
const provider = (baseUrl: string, headers?: Record<string, string>) => ({
  type: 'openai',
  baseUrl,
  ...(headers ? { headers } : {}),
});

describe('shared config fragments', () => {
  it('refuse a URL with a user name or password, saying to put credentials in a header', () => {
    for (const url of ['https://user:secret@hooks.example.com/x', 'https://token@hooks.example.com/x']) {
      assert.deepEqual(problems(httpUrl, url), [
        ': must not contain a user name or password; put credentials in a header (e.g. Authorization) instead',
      ]);
    }
  });

  it('accept absolute http and https URLs and refuse other schemes and relative URLs', () => {
    assert.deepEqual(problems(httpUrl, 'http://127.0.0.1:11434/v1'), []);
    assert.deepEqual(problems(httpUrl, 'https://hooks.example.com/services/x?y=1'), []);
    for (const url of ['file:///etc/passwd', '/v1', 'hooks.example.com', 'ftp://x.example.com/']) {
      assert.deepEqual(problems(httpUrl, url), [': must be an absolute http:// or https:// URL'], url);
    }
  });

  it('give notify webhooks and agent providers the same URL rule', () => {
    const withUserinfo = 'https://user:secret@x.example.com/hook';
    assert.deepEqual(problems(notifySchema, webhook(withUserinfo)), [
      'channels.team.url: must not contain a user name or password; put credentials in a header (e.g. Authorization) instead',
    ]);
    assert.deepEqual(problems(providerSchema, provider(withUserinfo)), [
      'baseUrl: must not contain a user name or password; put credentials in a header (e.g. Authorization) instead',
    ]);
    assert.deepEqual(problems(notifySchema, webhook('https://x.example.com/hook')), []);
    assert.deepEqual(problems(providerSchema, provider('https://x.example.com/v1')), []);
  });

  it('give notify webhooks and agent providers the same header rules', () => {
    for (const [headers, message] of [
      // zod reports a refused record key in its own words
      [{ 'bad name': 'x' }, 'Invalid key in record'],
      [{ 'x-ok': 'line\r\nInjected: 1' }, 'must not contain line breaks or NUL'],
    ] as const) {
      const key = Object.keys(headers)[0]!;
      assert.deepEqual(problems(notifySchema, webhook('https://x.example.com/', headers)), [
        `channels.team.headers.${key}: ${message}`,
      ]);
      assert.deepEqual(problems(providerSchema, provider('https://x.example.com/', headers)), [
        `headers.${key}: ${message}`,
      ]);
    }
    const fine = { authorization: 'Bearer x', 'X-Org_1.a~b': 'y' };
    assert.deepEqual(problems(notifySchema, webhook('https://x.example.com/', fine)), []);
    assert.deepEqual(problems(providerSchema, provider('https://x.example.com/', fine)), []);
  });

  it('write the header-name rule once, for config files and tool input schemas alike', () => {
    assert.equal(new RegExp(HEADER_NAME_PATTERN).source, HEADER_NAME.source);
    for (const name of ['accept', 'X-Api-Key', "!#$%&'*+.^_`|~"]) assert.ok(HEADER_NAME.test(name), name);
    for (const name of ['', 'a b', 'a:b', 'é', 'a\n'])
      assert.ok(!HEADER_NAME.test(name), JSON.stringify(name));
  });
});
