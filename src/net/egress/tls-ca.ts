/**
 * The certificate authority of one data directory, for the domains whose TLS the egress proxy
 * terminates (those with an inject rule, and only those). Its key stays in the data directory
 * (mode 0600, never mounted into a computer); computers trust its certificate through the
 * bundle they see. Certificates are made with the openssl command line.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { PaddockError } from '../../shared/errors.js';

/** Signs leaf certificates for terminated domains. */
export interface TerminatingCa {
  /** The CA certificate (PEM), what computers trust. */
  readonly certPem: string;
  /** A TLS context for serving `domain` (cached). */
  contextFor(domain: string): SecureContext;
  /** The system roots plus this CA, one PEM bundle (the computer's trust store). */
  bundle(): string;
}

function openssl(args: string[], input?: string): string {
  try {
    return execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    const stderr = String((e as { stderr?: unknown }).stderr ?? '').trim();
    throw new PaddockError(
      'INTERNAL',
      `openssl ${args[0]} failed (${stderr.slice(0, 300) || (e as Error).message}); install openssl, which policy.http.inject needs for https.`,
    );
  }
}

/** Loads the CA of `dir` (creating it on first use). */
export function loadTerminatingCa(dir: string): TerminatingCa {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keyFile = join(dir, 'ca.key');
  const certFile = join(dir, 'ca.pem');
  if (!existsSync(keyFile) || !existsSync(certFile)) {
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile]);
    openssl([
      'req',
      '-x509',
      '-new',
      '-key',
      keyFile,
      '-sha256',
      '-days',
      '3650',
      '-subj',
      '/CN=Paddock egress CA (this data directory only)',
      '-addext',
      'basicConstraints=critical,CA:TRUE,pathlen:0',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      certFile,
    ]);
  }
  const certPem = readFileSync(certFile, 'utf8');
  const leafDir = join(dir, 'leaf');
  mkdirSync(leafDir, { recursive: true, mode: 0o700 });
  const contexts = new Map<string, SecureContext>();
  return {
    certPem,
    bundle: () => `${[...rootCertificates, certPem.trim()].join('\n')}\n`,
    contextFor(domain: string): SecureContext {
      const cached = contexts.get(domain);
      if (cached) return cached;
      if (!/^[a-z0-9.-]+$/.test(domain)) {
        throw new PaddockError('INVALID_ARGUMENT', `"${domain}" is not a host name a certificate can name.`);
      }
      const key = join(leafDir, `${domain}.key`);
      const cert = join(leafDir, `${domain}.pem`);
      if (!existsSync(key) || !existsSync(cert)) {
        openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key]);
        const csr = openssl(['req', '-new', '-key', key, '-subj', `/CN=${domain}`]);
        const ext = join(leafDir, `${domain}.ext`);
        writeFileSync(
          ext,
          `subjectAltName=DNS:${domain}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n`,
        );
        const signed = openssl(
          [
            'x509',
            '-req',
            '-CA',
            certFile,
            '-CAkey',
            keyFile,
            '-CAcreateserial',
            '-days',
            '825',
            '-sha256',
            '-extfile',
            ext,
          ],
          csr,
        );
        writeFileSync(cert, signed, { mode: 0o600 });
      }
      const context = createSecureContext({ key: readFileSync(key), cert: readFileSync(cert) });
      contexts.set(domain, context);
      return context;
    },
  };
}
