import { truncateUtf8 } from '../shared/text.js';
import { redactArgv } from './redact-argv.js';
import { isSecretName, REDACTED, redactText } from './redact-text.js';

export { REDACTED, redactText };

/** Largest stored input, in UTF-8 bytes, marker included. */
export const MAX_INPUT_BYTES = 4096;

/** Nesting below this depth is replaced by a placeholder (keeps the walk off the stack limit). */
const MAX_DEPTH = 64;

/** True when a key (property name or header name) names a secret (see `isSecretName`). */
export function isSecretKey(key: string): boolean {
  return isSecretName(key);
}

/**
 * A deep copy of `value` that is safe to store: the value of every secret-named key is
 * replaced by {@link REDACTED}, in nested objects and arrays alike, and every string is
 * redacted by the shape of what it holds (`redactText`: tokens, URL credentials, bearer
 * values, secret `name=value` pairs, option values such as `--password VALUE` or `curl -u
 * user:password`, JSON bodies; an array of strings also as an argv, see `redactArgv`). Header
 * lists are covered in their common shapes: `{Authorization: …}`, `[["Authorization", …]]` and
 * `[{name: "Authorization", value: …}]`. Cycles, functions and bigints become strings so the
 * result always serialises. The input is never modified.
 */
export function redactSecrets(value: unknown): unknown {
  return walk(value, 0, new WeakSet());
}

function walk(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return redactText(value, redactSecrets);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'function' || typeof value === 'symbol') return undefined;
  if (value === null || typeof value !== 'object') return value;
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === 'function') return walk(withJson.toJSON(), depth, seen);
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Too deep]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return walkArray(value, depth, seen);
    const out: Record<string, unknown> = {};
    const pairName = headerPairName(value as Record<string, unknown>);
    for (const [key, child] of Object.entries(value)) {
      const secret = isSecretKey(key) || (pairName !== undefined && key === 'value');
      out[key] = secret ? REDACTED : walk(child, depth + 1, seen);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

function walkArray(value: unknown[], depth: number, seen: WeakSet<object>): unknown[] {
  if (value.length === 2 && typeof value[0] === 'string' && isSecretKey(value[0])) {
    return [value[0], REDACTED];
  }
  // a list of strings may be an argv: an option's credential is the next string
  const list = value.length > 1 && value.every((v) => typeof v === 'string') ? redactArgv(value) : value;
  return list.map((child) => {
    const out = walk(child, depth + 1, seen);
    return out === undefined ? null : out;
  });
}

/** `{name: "Authorization", value: …}` (and `key` instead of `name`): the pair's secret name. */
function headerPairName(obj: Record<string, unknown>): string | undefined {
  if (!('value' in obj)) return undefined;
  const name = typeof obj.name === 'string' ? obj.name : typeof obj.key === 'string' ? obj.key : undefined;
  return name !== undefined && isSecretKey(name) ? name : undefined;
}

/** An input as stored: secrets redacted, serialised as JSON (`null` for nothing). */
export function redactedJson(input: unknown): string {
  return JSON.stringify(redactSecrets(input)) ?? 'null';
}

/**
 * The preview stored in an audit row's `input`: {@link redactedJson} cut to `maxBytes` with a
 * marker (so a cut input is no longer parseable JSON; the store keeps the whole text apart).
 */
export function serializeInput(input: unknown, maxBytes: number = MAX_INPUT_BYTES): string {
  return truncateUtf8(redactedJson(input), maxBytes);
}
