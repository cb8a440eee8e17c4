import { randomUUID } from 'node:crypto';

/**
 * A random URL-safe id with an optional prefix, e.g. `inv_3f9a…`: `bytes` random bytes in
 * base64url. The bytes come from `randomUUID`, which Node serves from a buffer it refills from
 * the CSPRNG in bulk; `randomBytes` makes a system call on every call (OpenSSL's fork check),
 * several microseconds on a VM, and an id is minted for every tool call.
 */
export function randomId(prefix = '', bytes = 12): string {
  let hex = '';
  while (hex.length < bytes * 2) {
    const u = randomUUID();
    // 30 random hex digits: all but the version digit (14th) and the variant digit (19th)
    hex += u.slice(0, 8) + u.slice(9, 13) + u.slice(15, 18) + u.slice(20, 23) + u.slice(24);
  }
  const id = Buffer.from(hex.slice(0, bytes * 2), 'hex').toString('base64url');
  return prefix ? `${prefix}_${id}` : id;
}

/** Width of the time part of {@link timeOrderedId}: base36 milliseconds, enough until the year 5188. */
const TIME_DIGITS = 9;

/**
 * A random id whose text sorts by the millisecond it was minted, e.g. `inv_0mx6fvo5tQ3v…`: the
 * time in fixed-width base36, then `bytes` random bytes as in {@link randomId}. An index on such
 * ids grows at its right edge, so a commit of new rows touches a few pages instead of one page
 * per row scattered over the whole index (the audit's `id` column). The random part keeps the
 * id unguessable; the time part tells no more than the row's `started_at`.
 */
export function timeOrderedId(prefix = '', bytes = 12, now = Date.now()): string {
  const id = `${Math.max(0, Math.floor(now)).toString(36).padStart(TIME_DIGITS, '0')}${randomId('', bytes)}`;
  return prefix ? `${prefix}_${id}` : id;
}
