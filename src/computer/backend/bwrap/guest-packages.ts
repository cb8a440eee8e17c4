/**
 * Packages the guest agent loads on demand: node-pty and its prebuilt native binary for this
 * platform. They are bound read-only under /opt/paddock/node_modules, where Node's module
 * resolution finds them from the agent's directory; nothing else of node_modules is visible.
 */
import { readdirSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** A package directory on the host and its name (its path under node_modules in the guest). */
export interface GuestPackage {
  name: string;
  dir: string;
}

/** The host directories of node-pty and its native binary package; empty when not installed. */
export function guestPackages(): GuestPackage[] {
  try {
    const resolve = createRequire(import.meta.url).resolve;
    const main = realpathSync(dirname(resolve('@lydell/node-pty/package.json')));
    const nativeName = `@lydell/node-pty-${process.platform}-${process.arch}`;
    const native = realpathSync(
      dirname(createRequire(join(main, 'package.json')).resolve(`${nativeName}/package.json`)),
    );
    return [
      { name: '@lydell/node-pty', dir: main },
      { name: nativeName, dir: native },
    ];
  } catch {
    // Not installed for this platform: terminals answer UNSUPPORTED_CAPABILITY.
    return [];
  }
}

/** The native addons (`*.node`) of the packages, whose libraries the agent's loader needs too. */
export function nativeAddons(packages: GuestPackage[]): string[] {
  return packages.flatMap((p) => {
    try {
      return readdirSync(p.dir, { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('.node'))
        .map((f) => join(p.dir, f));
    } catch {
      return [];
    }
  });
}
