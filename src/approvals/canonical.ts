import { canonicalJson, sha256Hex } from '../shared/canonical-json.js';

export { canonicalJson };

/** SHA-256 (hex) of the canonical JSON of `value`: what an approval is bound to. */
export function argumentsSha256(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
