/**
 * Upstreams the by-name egress tests reach, all on 127.0.0.1 and mapped to names with
 * policy.http.hosts: an HTTPS server with a certificate of a CA the test makes (serving a git
 * repository over the dumb HTTP protocol and a plain greeting), and an sshd of its own on a
 * free port with a key made here (git over ssh to a bare repository).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import { join, normalize } from 'node:path';
import { pollUntil } from '../helpers/poll.js';

/** A CA and a server certificate for `names`, made with openssl in `dir`. */
export function makeCertificates(dir: string, names: string[]): { ca: string; key: Buffer; cert: Buffer } {
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem'].concat([
      '-days',
      '2',
      '-subj',
      '/CN=Upstream test CA',
    ]),
  );
  openssl(
    ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'srv.key', '-out', 'srv.csr'].concat([
      '-subj',
      `/CN=${names[0]}`,
    ]),
  );
  writeFileSync(join(dir, 'srv.ext'), `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\n`);
  openssl(
    ['x509', '-req', '-in', 'srv.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'].concat([
      '-out',
      'srv.pem',
      '-days',
      '2',
      '-extfile',
      'srv.ext',
    ]),
  );
  return {
    ca: readFileSync(join(dir, 'ca.pem'), 'utf8'),
    key: readFileSync(join(dir, 'srv.key')),
    cert: readFileSync(join(dir, 'srv.pem')),
  };
}

/** An HTTPS server on 127.0.0.1: files under `root` (the git repository), else a greeting. */
export async function startHttpsFiles(
  root: string,
  tls: { key: Buffer; cert: Buffer },
): Promise<{ port: number; seen: { path: string; authorization?: string }[]; close(): Promise<void> }> {
  const seen: { path: string; authorization?: string }[] = [];
  const server = createHttpsServer(tls, (req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?', 1)[0]!);
    seen.push({ path, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
    const file = normalize(join(root, path));
    if (path.startsWith('/repo.git/') && file.startsWith(root)) {
      try {
        res.end(readFileSync(file));
      } catch {
        res.writeHead(404).end();
      }
      return;
    }
    res.end(`tls greeting for ${path} auth=${req.headers.authorization ? 'present' : 'absent'}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function freePort(): Promise<number> {
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A throwaway sshd on 127.0.0.1 that lets in one key made here (as root, for git-upload-pack). */
export async function startSshd(dir: string): Promise<{
  port: number;
  /** The client's private key (OpenSSH format). */
  clientKey: string;
  close(): Promise<void>;
}> {
  mkdirSync(join(dir, 'ssh'), { recursive: true });
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const at = (name: string) => join(dir, 'ssh', name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', at('host_key')]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', at('client_key')]);
  writeFileSync(at('authorized_keys'), readFileSync(at('client_key.pub')));
  chmodSync(at('authorized_keys'), 0o600);
  const port = await freePort();
  const config = [
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    `HostKey ${at('host_key')}`,
    `AuthorizedKeysFile ${at('authorized_keys')}`,
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PermitRootLogin prohibit-password',
    'UsePAM no',
    'StrictModes no',
    'PidFile none',
    'LogLevel ERROR',
  ].join('\n');
  writeFileSync(at('sshd_config'), `${config}\n`);
  const child: ChildProcess = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', at('sshd_config')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await pollUntil(
    () =>
      new Promise<boolean>((resolve) => {
        if (child.exitCode !== null) throw new Error(`sshd exited: ${stderr}`);
        const s = createTcpServer();
        s.once('error', () => resolve(true)); // the port is taken: sshd listens
        s.listen(port, '127.0.0.1', () => s.close(() => resolve(false)));
      }),
    'sshd to listen',
    10_000,
  );
  return {
    port,
    clientKey: readFileSync(at('client_key'), 'utf8'),
    close: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}
