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
