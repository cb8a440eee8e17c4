/**
 * Signed heads of the audit chain. Every few minutes the head (the last end seq and its link)
 * is signed with an Ed25519 key kept outside the data directory and published (a file of JSON
 * lines, a notify channel). The chain proves every row up to the head; a signed head proves the
 * head: rows removed from the tail, or a chain recomputed by someone who could write the
 * database, no longer match what was signed.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { ChainHead } from '../store/audit-chain.js';
import type { AuditStore } from './types.js';
import type { ChainProblem } from './verify.js';

/** One published head. */
export interface SignedHead {
  version: 1;
  /** ISO time of the signature. */
  at: string;
  endSeq: number;
  hash: string;
  /** First 16 hex digits of the SHA-256 of the public key (DER). */
  keyId: string;
  /** Ed25519 signature (base64) of {@link signedText}. */
  signature: string;
}

/** The key pair of a signer. */
export interface HeadKey {
  privateKey?: KeyObject;
  publicKey: KeyObject;
  keyId: string;
}

/** The exact text that is signed. */
export function signedText(h: Pick<SignedHead, 'endSeq' | 'hash' | 'at'>): string {
  return `paddock-audit-head/1|${h.endSeq}|${h.hash}|${h.at}`;
}

function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

/**
 * Reads a key file: an Ed25519 private key (to sign) or public key (to verify). A key inside
 * `dataDir` is refused: whoever can rewrite the database could then re-sign it.
 */
export function loadHeadKey(file: string, dataDir?: string): HeadKey {
  let text: string;
  let real: string;
  try {
    real = realpathSync(file);
    text = readFileSync(real, 'utf8');
  } catch (e) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `Cannot read the audit signing key ${file}: ${(e as Error).message}. Give the path of an Ed25519 PEM key.`,
    );
  }
  if (dataDir !== undefined) {
    let dir = resolve(dataDir);
    try {
      dir = realpathSync(dir);
    } catch {
      // a data directory that does not exist yet holds nothing
    }
    const rel = relative(dir, real);
    if (rel === '' || (!rel.startsWith('..') && !rel.startsWith('/'))) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `The audit signing key ${file} is inside the data directory ${dataDir}; move it elsewhere (e.g. /etc/paddock/), so that whoever can rewrite the database cannot re-sign it.`,
      );
    }
  }
  try {
    if (text.includes('PRIVATE KEY')) {
      const privateKey = createPrivateKey(text);
      if (privateKey.asymmetricKeyType !== 'ed25519')
        throw new Error(`a ${privateKey.asymmetricKeyType} key`);
      const publicKey = createPublicKey(privateKey);
      return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
    }
    const publicKey = createPublicKey(text);
    if (publicKey.asymmetricKeyType !== 'ed25519') throw new Error(`a ${publicKey.asymmetricKeyType} key`);
    return { publicKey, keyId: keyIdOf(publicKey) };
  } catch (e) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The audit signing key ${file} is not an Ed25519 PEM key (${(e as Error).message}); make one with \`openssl genpkey -algorithm ed25519\`.`,
    );
  }
}

/** Signs `head` at `at`. */
export function signHead(
  head: Pick<ChainHead, 'endSeq' | 'hash'>,
  key: HeadKey,
  at = new Date(),
): SignedHead {
  if (!key.privateKey) throw new PaddockError('INVALID_ARGUMENT', 'Signing needs the private key.');
  const base = { endSeq: head.endSeq, hash: head.hash, at: at.toISOString() };
  const signature = sign(null, Buffer.from(signedText(base)), key.privateKey).toString('base64');
  return { version: 1, ...base, keyId: key.keyId, signature };
}

/** Whether `record` was signed by `key`. */
export function signatureValid(record: SignedHead, key: HeadKey): boolean {
  try {
    return verify(
      null,
      Buffer.from(signedText(record)),
      key.publicKey,
      Buffer.from(record.signature, 'base64'),
    );
  } catch {
    return false;
  }
}

/** Appends a signed head to `file` (one JSON line; the file is created with mode 0600). */
export function appendSignedHead(file: string, record: SignedHead): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  appendFileSync(file, `${JSON.stringify(record)}\n`, { mode: 0o600 });
}

/** The signed heads of a file, oldest first; a line that is not one is an error naming it. */
export function readSignedHeads(file: string): SignedHead[] {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim());
  return lines.map((line, i) => {
    try {
      const r = JSON.parse(line) as SignedHead;
      if (r.version === 1 && Number.isInteger(r.endSeq) && typeof r.hash === 'string') return r;
    } catch {
      // reported below
    }
    throw new PaddockError('INVALID_ARGUMENT', `Line ${i + 1} of ${file} is not a signed audit head.`);
  });
}

/**
 * Checks the chain against signed heads: each must carry a valid signature, and the row at
 * its end seq must still have the link it signed. The first problem, or null.
 */
export async function checkSignedHeads(
  audit: AuditStore,
  records: readonly SignedHead[],
  key: HeadKey,
): Promise<ChainProblem | null> {
  const head = await audit.chainHead();
  for (const r of records) {
    if (r.keyId !== key.keyId || !signatureValid(r, key)) {
      return {
        kind: 'changed',
        endSeq: r.endSeq,
        id: null,
        message: `The signed head of ${r.at} (end seq ${r.endSeq}) does not carry a valid signature of this key: the file of signed heads was altered, or another key signed it.`,
      };
    }
    if (r.endSeq === 0) continue;
    if (head.endSeq < r.endSeq) {
      return {
        kind: 'truncated',
        endSeq: head.endSeq + 1,
        id: null,
        message: `Rows after end seq ${head.endSeq} were removed: a head signed at ${r.at} names end seq ${r.endSeq}.`,
      };
    }
    const [row] = await audit.chained(r.endSeq - 1, 1);
    if (!row || row.endSeq !== r.endSeq) {
      return {
        kind: 'removed',
        endSeq: r.endSeq,
        id: null,
        message: `The row at end seq ${r.endSeq}, whose link was signed at ${r.at}, was removed.`,
      };
    }
    if (row.chainHash !== r.hash) {
      return {
        kind: 'changed',
        endSeq: r.endSeq,
        id: row.id,
        message: `The chain up to end seq ${r.endSeq} was rewritten: row ${row.id} no longer has the link signed at ${r.at}.`,
      };
    }
  }
  return null;
}

/** Options of {@link HeadSigner}. */
export interface HeadSignerOptions {
  audit: AuditStore;
  key: HeadKey;
  everyMs: number;
  /** Where each signed head goes (a file, a notify channel); a failure is logged, the next one tried. */
  publish: (record: SignedHead) => Promise<void>;
  logger: Logger;
}

/** Signs and publishes the head at start and then every `everyMs` until stopped. */
export class HeadSigner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: HeadSignerOptions) {}

  start(): void {
    void this.signNow();
    this.timer = setInterval(() => void this.signNow(), this.options.everyMs);
    this.timer.unref();
  }

  /** Signs and publishes the current head (one at a time). */
  signNow(): Promise<void> {
    this.running = this.running.then(async () => {
      try {
        const head = await this.options.audit.chainHead();
        const record = signHead(head, this.options.key);
        await this.options.publish(record);
        this.options.logger.debug('audit.head_signed', { endSeq: record.endSeq });
      } catch (e) {
        this.options.logger.warn('audit.sign_failed', { error: (e as Error).message });
      }
    });
    return this.running;
  }

  /** Stops signing; a last head is signed so the tail up to the stop is covered. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.signNow();
  }
}
