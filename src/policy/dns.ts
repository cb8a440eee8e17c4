import { lookup } from 'node:dns/promises';
import { PaddockError } from '../shared/errors.js';
import type { HostResolver } from './types.js';

/** Options of {@link createSystemHostResolver}. */
export interface SystemHostResolverOptions {
  /** Longest wait for one lookup; default 5000. */
  timeoutMs?: number;
}

/**
 * The host's own resolver (`getaddrinfo` through `node:dns/promises` `lookup`, every
 * address, IPv4 and IPv6, in the system's order). A lookup that runs past `timeoutMs`
 * rejects with PaddockError `TIMEOUT`; resolution failures reject with the system error
 * (its `code`, e.g. `ENOTFOUND`, is kept).
 */
export function createSystemHostResolver(options: SystemHostResolverOptions = {}): HostResolver {
  const timeoutMs = options.timeoutMs ?? 5000;
  return {
    async lookup(hostname: string): Promise<string[]> {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new PaddockError(
                'TIMEOUT',
                `Resolving ${hostname} took longer than ${timeoutMs} ms; check the server's DNS settings or retry later.`,
              ),
            ),
          timeoutMs,
        );
      });
      try {
        const found = await Promise.race([lookup(hostname, { all: true, verbatim: true }), timeout]);
        return found.map((entry) => entry.address);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
