import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { createHttpClient } from '../../../src/net/http-client.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { httpPolicy, staticResolver } from './helpers.js';

/** A throwaway CA and two leaf certificates (for `localhost` and for another name), made with openssl. */
function makeCertificates(dir: string): { ca: string; localhost: [string, string]; other: [string, string] } {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=Paddock Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  const leaf = (name: string): [string, string] => {
    writeFileSync(join(dir, `${name}.ext`), `subjectAltName=DNS:${name}\n`);
    openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
    return [readFileSync(join(dir, `${name}.key`), 'utf8'), readFileSync(join(dir, `${name}.crt`), 'utf8')];
  };
  return {
    ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    localhost: leaf('localhost'),
    other: leaf('other.test'),
  };
}

async function listen(
  key: string,
  cert: string,
  servernames: string[],
): Promise<{ server: Server; port: number }> {
  const server = createServer({ key, cert }, (req, res) => {
    servernames.push(String((req.socket as TLSSocket).servername));
    res.writeHead(200, { 'content-type': 'text/plain' }).end('secure');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('http client: https to a pinned address', () => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-tls-'));
  const servernames: string[] = [];
  let certs: ReturnType<typeof makeCertificates>;
  let good: { server: Server; port: number };
  let wrong: { server: Server; port: number };

  before(async () => {
    certs = makeCertificates(dir);
    good = await listen(...certs.localhost, servernames);
    wrong = await listen(...certs.other, servernames);
  });
  after(() => {
    for (const s of [good?.server, wrong?.server]) {
      s?.closeAllConnections();
      s?.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const dns = staticResolver({ localhost: ['127.0.0.1'] });

  it('verifies the certificate against the host name and sends it as SNI', async () => {
    const client = createHttpClient({ dns, extraCaCerts: [certs.ca] });
    const res = await client.request(
      { url: `https://localhost:${good.port}/` },
      { policy: httpPolicy([`localhost:${good.port}`]) },
    );
    assert.equal(res.body, 'secure');
    assert.equal(servernames.at(-1), 'localhost');
  });

  it('refuses a certificate issued for another name with UPSTREAM_ERROR', async () => {
    const client = createHttpClient({ dns, extraCaCerts: [certs.ca] });
    await assert.rejects(
      client.request(
        { url: `https://localhost:${wrong.port}/` },
        { policy: httpPolicy([`localhost:${wrong.port}`]) },
      ),
      (e: unknown) => {
        assert.ok(isPaddockError(e));
        assert.equal(e.code, 'UPSTREAM_ERROR');
        assert.match(String(e.details.cause), /ALTNAME|HOSTNAME/);
        return true;
      },
    );
  });

  it('refuses a certificate from a CA it was not told to trust', async () => {
    const client = createHttpClient({ dns });
    await assert.rejects(
      client.request(
        { url: `https://localhost:${good.port}/` },
        { policy: httpPolicy([`localhost:${good.port}`]) },
      ),
      (e: unknown) => {
        assert.ok(isPaddockError(e));
        assert.equal(e.code, 'UPSTREAM_ERROR');
        assert.match(e.message, /TLS/);
        return true;
      },
    );
  });
});
