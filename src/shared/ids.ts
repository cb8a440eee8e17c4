import { randomBytes } from 'node:crypto';

/** A random URL-safe id with an optional prefix, e.g. `inv_3f9a…`. */
export function randomId(prefix = '', bytes = 12): string {
  const id = randomBytes(bytes).toString('base64url');
  return prefix ? `${prefix}_${id}` : id;
}
