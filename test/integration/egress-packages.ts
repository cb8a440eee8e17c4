/**
 * Real package sources on 127.0.0.1 for the egress tests: a Python simple index with a wheel
 * built here, an npm registry with a tarball built here, a git repository served over the dumb
 * HTTP protocol. Each is a static directory behind one HTTP server.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';

/** Serves `root` on 127.0.0.1; a directory answers with its index.json or index.html (`@PORT@` in JSON becomes the port). */
export async function serveDirectory(
  root: string,
): Promise<{ port: number; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  let port = 0;
  const server = createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? '/').split('?', 1)[0]!);
    hits.push(url);
    let file = normalize(join(root, url));
    if (!file.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    try {
      if (statSync(file).isDirectory()) {
        file = existsSync(join(file, 'index.json')) ? join(file, 'index.json') : join(file, 'index.html');
      }
      const body = readFileSync(file);
      const text = file.endsWith('.json')
        ? Buffer.from(body.toString().replaceAll('@PORT@', String(port)))
        : body;
      const type = file.endsWith('.html')
        ? 'text/html'
        : file.endsWith('.json')
          ? 'application/json'
          : 'application/octet-stream';
      res.writeHead(200, { 'content-length': text.length, 'content-type': type });
      res.end(text);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  return {
    port,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A wheel of `egress_probe` 0.1 (prints a marker) under `<root>/simple/egress-probe/`. */
export function buildWheelIndex(root: string): void {
  const dir = join(root, 'simple', 'egress-probe');
  mkdirSync(dir, { recursive: true });
  const name = 'egress_probe-0.1-py3-none-any.whl';
  const script = `
import base64, hashlib, sys, zipfile
files = {
  'egress_probe/__init__.py': b'MARKER = "wheel-through-the-proxy"\\n',
  'egress_probe-0.1.dist-info/METADATA': b'Metadata-Version: 2.1\\nName: egress-probe\\nVersion: 0.1\\n',
  'egress_probe-0.1.dist-info/WHEEL': b'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n',
}
record = []
for path, data in files.items():
  digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
  record.append(f'{path},sha256={digest},{len(data)}')
record.append('egress_probe-0.1.dist-info/RECORD,,')
with zipfile.ZipFile(sys.argv[1], 'w') as z:
  for path, data in files.items():
    z.writestr(path, data)
  z.writestr('egress_probe-0.1.dist-info/RECORD', '\\n'.join(record) + '\\n')
`;
  execFileSync('python3', ['-c', script, join(dir, name)]);
  const sha = createHash('sha256')
    .update(readFileSync(join(dir, name)))
    .digest('hex');
  writeFileSync(
    join(dir, 'index.html'),
    `<html><body><a href="${name}#sha256=${sha}">${name}</a></body></html>\n`,
  );
  writeFileSync(
    join(root, 'simple', 'index.html'),
    '<html><body><a href="egress-probe/">egress-probe</a></body></html>\n',
  );
}

/** An npm registry document and tarball of `egress-probe` 1.0.0; `@PORT@` is replaced when served. */
export function buildNpmRegistry(root: string, host: string): void {
  const work = join(root, 'build', 'package');
  mkdirSync(work, { recursive: true });
  writeFileSync(
    join(work, 'package.json'),
    JSON.stringify({ name: 'egress-probe', version: '1.0.0', main: 'index.js' }),
  );
  writeFileSync(join(work, 'index.js'), 'module.exports = "tarball-through-the-proxy";\n');
  mkdirSync(join(root, 'egress-probe', '-'), { recursive: true });
  const tarball = join(root, 'egress-probe', '-', 'egress-probe-1.0.0.tgz');
  execFileSync('tar', ['-czf', tarball, '-C', join(root, 'build'), 'package']);
  const data = readFileSync(tarball);
  const doc = {
    name: 'egress-probe',
    'dist-tags': { latest: '1.0.0' },
    versions: {
      '1.0.0': {
        name: 'egress-probe',
        version: '1.0.0',
        main: 'index.js',
        dist: {
          tarball: `http://${host}:@PORT@/egress-probe/-/egress-probe-1.0.0.tgz`,
          shasum: createHash('sha1').update(data).digest('hex'),
          integrity: `sha512-${createHash('sha512').update(data).digest('base64')}`,
        },
      },
    },
  };
  writeFileSync(join(root, 'egress-probe', 'index.json'), JSON.stringify(doc));
}

/** A bare repository `<root>/repo.git` with one commit, ready for the dumb HTTP protocol. */
export function buildGitRepo(root: string): void {
  const work = join(root, 'work');
  mkdirSync(work, { recursive: true });
  const git = (args: string[], cwd: string) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], { cwd });
  git(['init', '-q', '-b', 'main'], work);
  writeFileSync(join(work, 'README'), 'cloned-through-the-proxy\n');
  git(['add', 'README'], work);
  git(['commit', '-qm', 'first'], work);
  git(['clone', '-q', '--bare', work, join(root, 'repo.git')], root);
  git(['update-server-info'], join(root, 'repo.git'));
}
