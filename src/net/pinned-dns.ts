import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { HostResolver } from '../policy/types.js';

/** Lower-cases a host name and strips trailing dots, so `Example.com.` and `example.com` share one answer. */
export function normalizeHostname(hostname: string): string {
  return hostname.toLowerCase().replace(/\.+$/, '');
}

/**
 * A HostResolver that asks its upstream at most once per host name and remembers the
 * answer. One instance lives for one hop of a request: the policy resolves through it,
 * and the client connects to the very addresses the policy saw, so a DNS answer that
 * changes between the check and the connect (DNS rebinding) cannot reach a new address.
 */
export class PinningResolver implements HostResolver {
  private readonly answers = new Map<string, Promise<string[]>>();

  constructor(private readonly upstream: HostResolver) {}

  lookup(hostname: string): Promise<string[]> {
    const key = normalizeHostname(hostname);
    let answer = this.answers.get(key);
    if (!answer) {
      answer = this.upstream.lookup(key);
      this.answers.set(key, answer);
    }
    return answer;
  }
}

/**
 * A `lookup` for node:net that answers only with the given addresses (already checked
 * by the policy). It honours a requested address family and the `all` option that
 * Node's happy-eyeballs connect uses.
 */
export function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const entries: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) }));
  return (hostname, options, callback) => {
    const family = options.family === 4 || options.family === 6 ? options.family : 0;
    const matching = family === 0 ? entries : entries.filter((e) => e.family === family);
    const first = matching[0];
    if (!first) {
      const error: NodeJS.ErrnoException = new Error(`No IPv${family} address was checked for ${hostname}`);
      error.code = 'ENOTFOUND';
      callback(error, '', 0);
      return;
    }
    if (options.all) callback(null, matching);
    else callback(null, first.address, first.family);
  };
}
