import { HEADER_NAME_PATTERN } from '../../config/fragments.js';
import type { HttpClient, HttpLimits, HttpRequest } from '../../net/http-client.js';
import { declareTool } from '../define.js';
import { type Infer, s } from '../schema.js';
import type { JsonSchema, Tool, ToolContext, ToolResult } from '../tool.js';

/** Longest URL accepted, in characters. */
export const MAX_URL_LENGTH = 8192;

/** Input properties shared by http_get and http_post. */
export function httpRequestProperties(limits: HttpLimits) {
  return {
    url: s.string({
      minLength: 8,
      maxLength: MAX_URL_LENGTH,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      description:
        'Absolute http:// or https:// URL. Its host must be allowed by the domain policy; a URL with a user name or password, or a bare IP address, is refused unless a rule names it.',
    }),
    headers: s.array({
      description:
        'Extra request headers as name/value pairs, e.g. [{"name": "accept", "value": "application/json"}]; a name given twice is sent once with the values joined by ", ". Host, Content-Length, Connection and similar framing headers are set by Paddock and refused here.',
      items: s.object(
        {
          name: s.string({ pattern: HEADER_NAME_PATTERN, maxLength: 128 }),
          value: s.string({ maxLength: 8192 }),
        },
        { required: ['name', 'value'], additionalProperties: false },
      ),
      maxItems: 32,
    }),
    timeoutMs: s.integer({
      minimum: 100,
      maximum: limits.maxTimeoutMs,
      default: limits.defaultTimeoutMs,
      description: `Time for the whole exchange including redirects and the body, in milliseconds (default ${limits.defaultTimeoutMs}). Never exceeds the call's own deadline.`,
    }),
    maxBytes: s.integer({
      minimum: 1,
      maximum: limits.maxBytesLimit,
      default: limits.defaultMaxBytes,
      description: `Most response body bytes to return (default ${limits.defaultMaxBytes}). A longer body is cut there and the result says truncated: true.`,
    }),
  };
}

/** The input fields shared by http_get and http_post, as `execute` receives them. */
type CommonInput = Infer<ReturnType<typeof httpInput>>;

/** The http_get input; http_post adds its body fields to the same properties. */
function httpInput(limits: HttpLimits) {
  return s.object(httpRequestProperties(limits), { required: ['url'], additionalProperties: false });
}

/** What the result looks like (MCP `outputSchema`). */
export const HTTP_OUTPUT_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    status: { type: 'integer', description: 'HTTP status of the final response.' },
    statusText: { type: 'string' },
    url: { type: 'string', description: 'Final URL after redirects.' },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    redirects: {
      type: 'array',
      items: {
        type: 'object',
        properties: { status: { type: 'integer' }, url: { type: 'string' }, location: { type: 'string' } },
      },
    },
    body: { type: 'string' },
    encoding: { type: 'string', enum: ['utf8', 'base64'] },
    truncated: { type: 'boolean' },
    bytes: { type: 'integer' },
  },
  required: ['status', 'url', 'headers', 'redirects', 'body', 'encoding', 'truncated', 'bytes'],
};

/** Sentences shared by both HTTP tool descriptions. */
export const HTTP_RESULT_NOTES =
  'The result has status, final url, the redirects followed (at most 5, each re-checked against the policy; credentials are not forwarded to another host), selected headers, and body: text for textual content types, otherwise base64 with encoding "base64". ' +
  'A 4xx or 5xx answer is still a successful call: read status before trusting body. ' +
  'If truncated is true, the body was cut at maxBytes. A denied host fails with POLICY_DENIED naming the rule: do not retry it through another address or a redirect, ask the operator instead.';

/**
 * Runs one request through the client with the caller's policy and bounds, records the
 * policy rules of every hop on the audit row, and returns the response as the result.
 */
export async function runHttpRequest(
  client: HttpClient,
  request: HttpRequest,
  ctx: ToolContext,
): Promise<ToolResult> {
  const rules: string[] = [];
  const response = await client.request(request, {
    policy: ctx.policy,
    signal: ctx.signal,
    deadline: ctx.deadline,
    onPolicyDecision: (decision) => {
      rules.push(decision.rule);
      ctx.notePolicyRule(rules.join(' -> '));
    },
  });
  return { structured: { ...response } };
}

type HeaderPair = { name: string; value: string };

/** Header pairs as one record with lower-case names; repeated names have their values joined. */
function headerRecord(pairs: readonly HeaderPair[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { name, value } of pairs) {
    const key = name.toLowerCase();
    headers[key] = headers[key] === undefined ? value : `${headers[key]}, ${value}`;
  }
  return headers;
}

/** Copies the optional request fields shared by both tools from a validated input. */
export function commonRequestFields(input: CommonInput): Omit<HttpRequest, 'url' | 'method' | 'body'> {
  const fields: Omit<HttpRequest, 'url' | 'method' | 'body'> = {};
  if (input.headers !== undefined) fields.headers = headerRecord(input.headers);
  if (input.timeoutMs !== undefined) fields.timeoutMs = input.timeoutMs;
  if (input.maxBytes !== undefined) fields.maxBytes = input.maxBytes;
  return fields;
}

/** http_get: fetch a URL the domain policy allows. */
export function createHttpGetTool(client: HttpClient): Tool {
  return declareTool({
    name: 'http_get',
    title: 'HTTP GET',
    description:
      'Fetch a URL with an HTTP GET and return the response. Use it to read a web page, a JSON API or a file from a host that the domain policy allows. ' +
      HTTP_RESULT_NOTES,
    input: httpInput(client.limits),
    outputSchema: HTTP_OUTPUT_SCHEMA,
    annotations: { title: 'HTTP GET', readOnlyHint: true, idempotentHint: true, openWorldHint: true },
    source: 'builtin',
    toolsets: ['builtin'],
    execute: (input, ctx) =>
      runHttpRequest(client, { method: 'GET', url: input.url, ...commonRequestFields(input) }, ctx),
    policyActions: (input) => [{ type: 'http', method: 'GET', url: input.url }],
  });
}
