import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LAUNCH_EXIT, launchNamespacePrefix } from '../../../src/computer/backend/bwrap/launch-namespace.js';

describe('the launch’s own mount namespace', () => {
  it('unshares a private mount namespace, hands the sandbox uid and each mount to its shell, and ends with "--" before the rest of the launch', () => {
    const prefix = launchNamespacePrefix('/tmp/root/anchor/g3-abc', 64_000, [
      { kind: 'bind', source: '/data/computers/g3/mounts', target: '/tmp/root/anchor/g3-abc/mounts' },
      {
        kind: 'disk',
        image: '/data/workspaces/named-x/disk.img',
        target: '/tmp/root/anchor/g3-abc/disk',
        freshTmp: true,
      },
    ]);
    assert.deepEqual(prefix.slice(0, 5), ['/usr/bin/unshare', '--mount', '--propagation', 'private', '--']);
    const script = prefix[7]!;
    assert.match(script, /mount -n -t ext4 -o loop,nosuid,nodev,noatime,noinit_itable/);
    assert.match(script, new RegExp(`exit ${LAUNCH_EXIT.disk}`));
    assert.match(script, /exec "\$@"$/);
    assert.deepEqual(prefix.slice(8), [
      'paddock-launch-ns',
      '64000',
      'bind',
      '/data/computers/g3/mounts',
      '/tmp/root/anchor/g3-abc/mounts',
      'disk-fresh-tmp',
      '/data/workspaces/named-x/disk.img',
      '/tmp/root/anchor/g3-abc/disk',
      '--',
    ]);
  });

  it('refuses a mount target outside the launch’s own directory', () => {
    for (const target of ['/a/../etc', '/a/b/c', '/a', '/ab/c', '/a/', '/a/--']) {
      assert.throws(() => launchNamespacePrefix('/a', 1, [{ kind: 'bind', source: '/x', target }]), target);
    }
  });
});
