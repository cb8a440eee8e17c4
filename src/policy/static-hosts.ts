import type { PaddockError } from '../shared/errors.js';
import { compileEach, invalidRule } from './decision.js';
import { normaliseHost } from './domain-rules.js';
import { inspectAddress, ipFromHostname } from './ip.js';

/** `policy.http.hosts` compiled: normalised name → canonical addresses. */
export type StaticHosts = ReadonlyMap<string, readonly string[]>;

/**
 * Compiles the static host map. A key must be a plain host name (no wildcard, no IP, no port);
 * each value an IP address. Throws INVALID_ARGUMENT naming the entry (or collects it in
 * `problems`). The addresses given here count as named by a rule for that name only: the
 * private-address guard lets them through because an operator wrote them down.
 */
export function compileStaticHosts(
  config: Readonly<Record<string, string | readonly string[]>>,
  problems?: PaddockError[],
): StaticHosts {
  const entries = compileEach(
    Object.entries(config),
    ([name, value]) => {
      const list = typeof value === 'string' ? [value] : [...value];
      const label = `http.hosts.${name}=${list.join(',')}`;
      const host = /^[A-Za-z0-9.-]+$/.test(name) ? normaliseHost(name) : null;
      if (host === null || !host.includes('.') || ipFromHostname(host)) {
        throw invalidRule(label, 'the key must be a host name with a dot (e.g. registry.internal)');
      }
      const addresses = list.map((text) => {
        const info = inspectAddress(text);
        if (!info) throw invalidRule(label, `"${text}" is not an IP address`);
        return info.address;
      });
      return [host, addresses] as const;
    },
    problems,
  );
  return new Map(entries);
}
