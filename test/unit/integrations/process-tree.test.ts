import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { isAlive, processTree, signalAll } from '../../../src/integrations/process-tree.js';
import { pidAlive } from '../../fixtures/mcp/harness.js';
import { pollUntil } from '../../helpers/poll.js';

describe('process tree', () => {
  test('finds a grandchild and kills the whole tree, even one that ignores SIGTERM', async () => {
    // a parent that starts a child ignoring SIGTERM and prints the child's pid once the child is set up
    const child = `process.on("SIGTERM",()=>{}); console.log("ready"); setInterval(()=>{},1000)`;
    const parent = spawn(
      process.execPath,
      [
        '-e',
        `const c = require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(child)}], { stdio: ['ignore', 'pipe', 'ignore'] });
         c.stdout.once('data', () => console.log(c.pid)); setInterval(()=>{},1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let childPid = 0;
    try {
      parent.stdout.on('data', (d: Buffer) => {
        childPid = Number(String(d).trim());
      });
      await pollUntil(() => childPid > 0 && processTree(parent.pid!).length === 2, 'the grandchild to start');
      const tree = processTree(parent.pid!);
      assert.deepEqual(
        tree.map((r) => r.pid),
        [parent.pid, childPid],
      );
      assert.ok(tree.every(isAlive));
      signalAll(tree, 'SIGTERM');
      await pollUntil(() => !pidAlive(parent.pid!), 'the parent to exit on SIGTERM');
      assert.ok(pidAlive(childPid), 'the child ignored SIGTERM and outlived its parent');
      signalAll(tree, 'SIGKILL');
      await pollUntil(() => !pidAlive(childPid), 'the orphaned child to be killed');
    } finally {
      if (childPid && pidAlive(childPid)) process.kill(childPid, 'SIGKILL');
      parent.kill('SIGKILL');
    }
  });

  test('does not signal a process whose pid was reused (start time differs)', () => {
    const self = processTree(process.pid)[0]!;
    assert.equal(isAlive(self), true);
    assert.equal(isAlive({ pid: process.pid, startTime: '1' }), false);
  });

  test('returns nothing for a pid that does not exist', () => {
    assert.deepEqual(processTree(2 ** 22 + 12345), []);
  });
});
