import { constants } from 'node:fs';
import { access, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox, type WhitelistSandbox } from '../../../src/policy/index.js';
import type { ExecResolver, HostResolver } from '../../../src/policy/types.js';

/** The real whitelist sandbox from a partial `policy` config section (schema defaults fill the rest). */
export function sandboxFor(policy: unknown): WhitelistSandbox {
  return createWhitelistSandbox(policySchema.parse(policy));
}

/** An ExecResolver over node:fs: the first executable `<dir>/<name>`, like execvp. */
export function fsWhich(): ExecResolver {
  return {
    async which(name, searchPath) {
      for (const dir of searchPath) {
        const candidate = `${dir}/${name}`;
        try {
          await access(candidate, constants.X_OK);
          return candidate;
        } catch {
          // not here; try the next directory
        }
      }
      return null;
    },
  };
}

/** A HostResolver with fixed answers that fails unknown names like getaddrinfo does. */
export function tableResolver(answers: Record<string, string[]>): HostResolver & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async lookup(hostname) {
      calls.push(hostname);
      const found = answers[hostname];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return found;
    },
  };
}

/** Runs `fn` with a fresh real temp directory (canonical path), removed afterwards. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'paddock-policy-')));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
