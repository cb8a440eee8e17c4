/**
 * `policy.http.inject`: headers the egress proxy adds to requests for one named domain, so a
 * credential reaches the service without ever entering the computer. A value's `${VAR}` is
 * read from the server's environment when the request is made.
 */
import type { HttpInjectRule } from '../../config/schema.js';
import { PaddockError } from '../../shared/errors.js';

/** Header names the proxy owns; an inject rule may not set them. */
const RESERVED = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'upgrade', 'te']);

/** Compiled inject rules: domain → header templates. */
export type InjectRules = ReadonlyMap<string, ReadonlyArray<{ name: string; template: string }>>;

/** Compiles the rules; throws INVALID_ARGUMENT naming a bad entry. */
export function compileInjectRules(rules: readonly HttpInjectRule[]): InjectRules {
  const out = new Map<string, { name: string; template: string }[]>();
  rules.forEach((rule, i) => {
    const where = `policy.http.inject.${i}`;
    let domain: string;
    try {
      domain = new URL(`https://${rule.domain}/`).hostname.replace(/\.$/, '');
    } catch {
      domain = '';
    }
    if (!domain || domain.includes('*') || /[/:@]/.test(rule.domain) || !domain.includes('.')) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `${where}.domain: "${rule.domain}" must be exactly one host name (no wildcard, port or path); fix paddock.yaml.`,
      );
    }
    const headers = out.get(domain) ?? [];
    for (const [name, template] of Object.entries(rule.headers)) {
      if (RESERVED.has(name.toLowerCase()) || name.toLowerCase().startsWith('proxy-')) {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `${where}.headers: the proxy sets ${name} itself; inject another header.`,
        );
      }
      headers.push({ name: name.toLowerCase(), template });
    }
    out.set(domain, headers);
  });
  return out;
}

/** The headers for `domain` with `${VAR}` expanded from `env`; a missing variable is an error. */
export function injectedHeaders(
  rules: InjectRules | undefined,
  domain: string,
  env: NodeJS.ProcessEnv,
): Record<string, string> | null {
  const list = rules?.get(domain);
  if (!list) return null;
  const headers: Record<string, string> = {};
  for (const { name, template } of list) {
    headers[name] = template.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, key: string) => {
      const value = env[key];
      if (value === undefined) {
        throw new PaddockError(
          'UPSTREAM_ERROR',
          `The server has no ${key} in its environment, which policy.http.inject needs for ${domain}; set it and restart Paddock.`,
        );
      }
      return value;
    });
  }
  return headers;
}
