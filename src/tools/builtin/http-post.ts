import type { HttpClient } from '../../net/http-client.js';
import { PaddockError } from '../../shared/errors.js';
import { declareTool } from '../define.js';
import { s } from '../schema.js';
import type { Tool } from '../tool.js';
import {
  commonRequestFields,
  HTTP_OUTPUT_SCHEMA,
  HTTP_RESULT_NOTES,
  httpRequestProperties,
  runHttpRequest,
} from './http-get.js';
import { parseJsonText } from './json-text.js';

/** http_post: send a body to a URL the domain policy allows. */
export function createHttpPostTool(client: HttpClient): Tool {
  const maxBodyBytes = client.limits.maxRequestBytes;
  return declareTool({
    name: 'http_post',
    title: 'HTTP POST',
    description:
      'Send an HTTP POST to a URL the domain policy allows and return the response: submit a form, call a JSON API, trigger a webhook. ' +
      'Give either json (JSON text, sent as application/json) or body (a string, sent as text/plain unless contentType says otherwise), not both; with neither, the body is empty. ' +
      `The body may be at most ${maxBodyBytes} bytes. A 301/302/303 redirect is followed as a GET without the body, as browsers do; 307/308 repeat the POST. ` +
      HTTP_RESULT_NOTES,
    input: s.object(
      {
        ...httpRequestProperties(client.limits),
        body: s.string({
          maxLength: maxBodyBytes,
          description: 'Raw request body (UTF-8 text). Use contentType to label it.',
        }),
        json: s.string({
          maxLength: maxBodyBytes,
          description:
            'The body as JSON text, a string such as \'{"title": "Hello"}\', sent as is with Content-Type application/json. It must parse as JSON.',
        }),
        contentType: s.string({
          maxLength: 200,
          description:
            'Content-Type of the body, e.g. "application/x-www-form-urlencoded". Defaults to application/json with json and text/plain; charset=utf-8 with body.',
        }),
      },
      { required: ['url'], additionalProperties: false },
    ),
    outputSchema: HTTP_OUTPUT_SCHEMA,
    annotations: { title: 'HTTP POST', readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    source: 'builtin',
    toolsets: ['builtin'],
    policyActions: (input) => [{ type: 'http', method: 'POST', url: input.url }],
    async execute(input, ctx) {
      if (input.body !== undefined && input.json !== undefined) {
        throw new PaddockError('INVALID_ARGUMENT', 'Give either body or json, not both; drop one of them.');
      }
      const fields = commonRequestFields(input);
      const headers: Record<string, string> = { ...fields.headers };
      let body: string | undefined;
      if (input.json !== undefined) {
        body = input.json;
        parseJsonText(body, 'json');
        headers['content-type'] = input.contentType ?? headers['content-type'] ?? 'application/json';
      } else if (input.body !== undefined) {
        body = input.body;
        headers['content-type'] = input.contentType ?? headers['content-type'] ?? 'text/plain; charset=utf-8';
      } else if (input.contentType !== undefined) {
        headers['content-type'] = input.contentType;
      }
      const request = { ...fields, method: 'POST', url: input.url, headers };
      return runHttpRequest(client, body === undefined ? request : { ...request, body }, ctx);
    },
  });
}
