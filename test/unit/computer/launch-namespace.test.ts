import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LAUNCH_EXIT, launchNamespacePrefix } from '../../../src/computer/backend/launch-namespace.js';

describe('the launch’s own mount namespace', () => {
  it('unshares a private mount namespace, then hands the anchor, the sandbox uid and each mount to its shell, and ends with "--" before the rest of the launch', () => {
    const prefix = launchNamespacePrefix('/tmp/root/anchor', 64_000, [
      { kind: 'bind', source: '/data/computers/g3/mounts', name: 'mounts' },
      { kind: 'disk', image: '/data/workspaces/named-x/disk.img', name: 'disk', freshTmp: true },
    ]);
    assert.deepEqual(prefix.slice(0, 5), ['/usr/bin/unshare', '--mount', '--propagation', 'private', '--']);
    const script = prefix[7]!;
    assert.match(script, /mount -n -t tmpfs -o mode=0700,uid=\$id,gid=\$id/);
    assert.match(script, /mount -n -t ext4 -o loop,nosuid,nodev,noatime,noinit_itable/);
    assert.match(script, new RegExp(`exit ${LAUNCH_EXIT.disk}`));
    assert.match(script, /exec "\$@"$/);
    assert.deepEqual(prefix.slice(8), [
      'paddock-launch-ns',
      '/tmp/root/anchor',
      '64000',
      'bind',
      '/data/computers/g3/mounts',
      'mounts',
      'disk-fresh-tmp',
      '/data/workspaces/named-x/disk.img',
      'disk',
      '--',
    ]);
  });

  it('refuses a mount name that could leave the anchor', () => {
    for (const name of ['../etc', 'a/b', '', '--']) {
      assert.throws(() => launchNamespacePrefix('/a', 1, [{ kind: 'bind', source: '/x', name }]));
    }
  });
});
