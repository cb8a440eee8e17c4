/**
 * A computer without network (mode `none`) still answers name lookups: the guest's resolver
 * refuses each at once, so a program fails in milliseconds instead of waiting for a timeout,
 * and the job that asked gets a line in its stderr saying why and what to change.
 */
import type { GuestEvent } from '../guest/protocol.js';
import type { GuestClient } from './link/guest-client.js';
import { GUEST_RESOLVER } from './link/guest-layout.js';
import type { ComputerLog } from './logs.js';

/** The rule of a lookup refused because the computer has no network. */
export const NETWORK_NONE_RULE = 'network-none';

/** Starts the refusing resolver; a guest that cannot serve it (no account of its own) is left as it is. */
export async function startOfflineResolver(
  client: GuestClient,
  log: ComputerLog,
  generation: number,
): Promise<void> {
  try {
    await client.call('net.listen', { resolver: GUEST_RESOLVER, names: null, windowBytes: 64 * 1024 });
  } catch (e) {
    log.add('debug', 'computer.resolver', `No resolver in this computer: ${(e as Error).message}`, {
      generation,
    });
  }
}

/** What a job that looked up `name` reads in its stderr. */
export function offlineLine(name: string, profileId: string): string {
  return `paddock: this computer has no network, so looking up ${name} failed at once (profile "${profileId}" has network mode none); to reach it, launch a profile with network mode proxy and allow the host in policy.http.allow of paddock.yaml.`;
}

/** The job a `net.offline` event names (by its cgroup), if any. */
export function offlineJob(
  event: Extract<GuestEvent, { t: 'net.offline' }>,
  idOfFamily: (name: string) => string | null,
): string | null {
  return event.origin?.cgroup ? idOfFamily(event.origin.cgroup) : null;
}
