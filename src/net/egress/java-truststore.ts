/**
 * The JVM's trust store with the egress CA added, for computers whose TLS Paddock terminates
 * (credential injection): Java reads its own `cacerts` (a JKS file on Debian), not the system
 * PEM bundle, so the CA goes in there too. The JKS layout is small and stable: a header, entries,
 * and a SHA-1 over the store keyed by its password ("changeit", the store's well-known default).
 */
import { createHash, X509Certificate } from 'node:crypto';

const JKS_MAGIC = 0xfeedfeed;
const TRUSTED_CERT_ENTRY = 2;
const DEFAULT_PASSWORD = 'changeit';

function utf(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(2);
  length.writeUInt16BE(bytes.length, 0);
  return Buffer.concat([length, bytes]);
}

function digestOf(body: Buffer, password: string): Buffer {
  const hash = createHash('sha1');
  const chars = Buffer.alloc(password.length * 2);
  for (let i = 0; i < password.length; i++) chars.writeUInt16BE(password.charCodeAt(i), i * 2);
  hash.update(chars);
  hash.update(Buffer.from('Mighty Aphrodite', 'utf8'));
  hash.update(body);
  return hash.digest();
}

/**
 * `store` (a JKS trust store) with `certPem` added as a trusted certificate under `alias`;
 * null when `store` is not a JKS file this understands (the JVM then keeps its own store).
 */
export function jksWithCertificate(store: Buffer, certPem: string, alias: string): Buffer | null {
  if (store.length < 32 || store.readUInt32BE(0) !== JKS_MAGIC) return null;
  const version = store.readUInt32BE(4);
  if (version !== 2) return null;
  const count = store.readUInt32BE(8);
  const der = new X509Certificate(certPem).raw;
  const entries = store.subarray(12, store.length - 20);
  const header = Buffer.alloc(12);
  header.writeUInt32BE(JKS_MAGIC, 0);
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(count + 1, 8);
  const tag = Buffer.alloc(4);
  tag.writeUInt32BE(TRUSTED_CERT_ENTRY, 0);
  const timestamp = Buffer.alloc(8);
  timestamp.writeBigUInt64BE(BigInt(Date.now()), 0);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(der.length, 0);
  const entry = Buffer.concat([tag, utf(alias), timestamp, utf('X.509'), length, der]);
  const body = Buffer.concat([header, entries, entry]);
  return Buffer.concat([body, digestOf(body, DEFAULT_PASSWORD)]);
}

/** Whether a JKS store's digest is right for `password` (tests; the JVM checks it in keytool). */
export function jksDigestValid(store: Buffer, password = DEFAULT_PASSWORD): boolean {
  const body = store.subarray(0, store.length - 20);
  return digestOf(body, password).equals(store.subarray(store.length - 20));
}
