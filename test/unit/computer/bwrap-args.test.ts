import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildBwrapArgs, generatedEtc } from '../../../src/computer/backend/bwrap/args.js';
import type { SandboxSpec } from '../../../src/computer/backend/types.js';

const spec: SandboxSpec = {
  generation: 4,
  hostDir: '/data/computers/g4',
  mounts: [{ source: '/srv/datasets', target: '/data', readOnly: true }],
  env: { PATH: '/usr/bin' },
  limits: { processes: 64, memoryMb: 256, diskMb: 16, openFiles: 128 },
  networkMode: 'none',
  probe: ['bash'],
};

function args(tmpDir: string | null = null) {
  return buildBwrapArgs(spec, {
    tmpDir,
    nodePath: '/usr/bin/node',
    clientsDir: null,
    guestDir: '/app/dist/src/guest',
    workspace: '/data/computers/g4/workspace',
    generated: { '/etc/passwd': 4 },
    rootEntries: {
      '/bin': { kind: 'symlink', target: 'usr/bin' },
      '/lib32': { kind: 'absent' },
      '/sbin': { kind: 'dir' },
    },
    etcEntries: ['ld.so.cache', 'ssl'],
  });
}

/** Pairs `--flag a b` into the mount table the sandbox will see. */
function mounts(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (['--bind', '--ro-bind', '--ro-bind-try', '--symlink', '--ro-bind-data'].includes(a))
      out.push(`${a} ${argv[i + 1]} ${argv[i + 2]}`);
  }
  return out;
}

describe('bwrap command line', () => {
  it('unshares every namespace, drops all capabilities and dies with its parent', () => {
    const a = args();
    for (const flag of [
      '--unshare-all',
      '--unshare-user',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ]) {
      assert.ok(a.includes(flag), flag);
    }
    assert.deepEqual(a.slice(a.indexOf('--cap-drop'), a.indexOf('--cap-drop') + 2), ['--cap-drop', 'ALL']);
    assert.ok(!a.includes('--share-net'));
    assert.equal(a[a.indexOf('--uid') + 1], '1000');
  });

  it('mounts only the allowed host paths, read-only except the workspace', () => {
    const m = mounts(args());
    assert.deepEqual(m, [
      '--ro-bind /usr /usr',
      '--symlink usr/bin /bin',
      '--ro-bind /sbin /sbin',
      '--ro-bind-try /etc/ld.so.cache /etc/ld.so.cache',
      '--ro-bind-try /etc/ssl /etc/ssl',
      '--ro-bind-data 4 /etc/passwd',
      '--symlink ../tmp /var/tmp',
      '--bind /data/computers/g4/workspace /workspace',
      '--ro-bind /app/dist/src/guest /opt/paddock/guest',
      '--ro-bind /usr/bin/node /opt/paddock/bin/node',
      '--ro-bind /srv/datasets /data',
    ]);
    const a = args();
    assert.equal(a[a.indexOf('--tmpfs') - 1], String(16 * 1024 * 1024), '/tmp is a size-limited tmpfs');
  });

  it('puts /tmp on the computer’s disk when it has one, beside its workspace, and makes no tmpfs for it', () => {
    const a = args('/anchor/disk/tmp');
    const m = mounts(a);
    assert.ok(m.includes('--bind /anchor/disk/tmp /tmp'), m.join('\n'));
    assert.ok(!a.includes('--tmpfs'), 'no tmpfs beside the disk');
    assert.ok(m.indexOf('--bind /anchor/disk/tmp /tmp') < m.indexOf('--symlink ../tmp /var/tmp'));
  });

  it('gives the guest account a passwd entry with its home in the workspace and no secrets in /etc', () => {
    const etc = generatedEtc(4, '/bin/bash');
    assert.match(etc['/etc/passwd']!, /^agent:x:1000:1000:[^:]*:\/workspace:\/bin\/bash$/m);
    assert.ok(!('/etc/shadow' in etc));
    assert.match(etc['/etc/profile']!, /PATH=\/usr\/local\/bin:\/usr\/bin:\/bin:\/opt\/paddock\/bin/);
  });
});

describe('bwrap command line of a computer on an image', () => {
  const onImage = (user: 'guest' | 'root') =>
    buildBwrapArgs(spec, {
      tmpDir: '/launch/disk/tmp',
      nodePath: '/usr/bin/node',
      clientsDir: null,
      guestDir: '/app/dist/src/guest',
      workspace: '/launch/disk/workspace',
      generated: { '/etc/hosts': 4 },
      rootEntries: { '/bin': { kind: 'symlink', target: 'usr/bin' } },
      etcEntries: ['ssl'],
      accounts: { infoFd: 9, blockFd: 10 },
      image: { root: '/launch/root', user },
      agentLoader: { loader: '/lib64/ld-linux-x86-64.so.2', libraries: ['/lib/x86_64-linux-gnu/libc.so.6'] },
    });

  it("binds the image's overlay as / and nothing of the host's system, with the agent outside the image's ids", () => {
    const argv = onImage('guest');
    const table = mounts(argv);
    assert.equal(table[0], '--bind /launch/root /', 'the overlay comes first, everything else on top');
    assert.ok(
      !table.some((m) => m.includes(' /usr ') || m.includes('/etc/ssl') || m.startsWith('--symlink')),
    );
    assert.ok(!argv.includes('/var/tmp'), "/var/tmp is the image's own");
    assert.equal(argv[argv.indexOf('--uid') + 1], '65536');
    assert.equal(argv[argv.indexOf('--jobs-uid') + 1], '1000');
    assert.ok(
      argv.includes('--require-scope'),
      'no job may start without the launcher that drops capabilities',
    );
  });

  it("starts the agent through the host's loader and libraries, and jobs of a root profile as uid 0", () => {
    const argv = onImage('root');
    const command = argv.slice(argv.indexOf('--') + 1);
    assert.deepEqual(command.slice(0, 5), [
      '/opt/paddock/lib/ld-linux-x86-64.so.2',
      '--inhibit-cache',
      '--library-path',
      '/opt/paddock/lib',
      '/opt/paddock/bin/node',
    ]);
    assert.ok(mounts(argv).includes('--ro-bind /lib/x86_64-linux-gnu/libc.so.6 /opt/paddock/lib/libc.so.6'));
    assert.equal(argv[argv.indexOf('--jobs-uid') + 1], '0');
  });
});
