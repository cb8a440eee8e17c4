/**
 * The listening table a computer's views read: one read of the kernel's TCP tables per interval,
 * only ever of the computer's own network namespace.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { ListeningTable } from '../../../src/computer/jobs/listening-ports.js';
import { pollUntil } from '../../helpers/poll.js';

const isRoot = process.getuid?.() === 0;

/** A python listener on `port` in a network namespace of its own (as a computer's jobs are). */
function listenerInOwnNetns(port: number): ChildProcess {
  return spawn(
    'unshare',
    [
      '--net',
      '--',
      'python3',
      '-c',
      `import socket,time\ns=socket.socket()\ns.bind(("127.0.0.1",${port}))\ns.listen()\nprint("up",flush=True)\ntime.sleep(600)`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
}

describe('the listening table of a computer', {
  skip: isRoot ? false : 'network namespaces need root',
}, () => {
  /** A table over a listener on `port` at clock 0, read once, then the listener killed. */
  async function tableOfKilledListener(t: TestContext, port: number) {
    const child = listenerInOwnNetns(port);
    t.after(() => child.kill('SIGKILL'));
    await new Promise((r) => child.stdout?.once('data', r));
    const clock = { now: 0 };
    const table = new ListeningTable(
      () => child.pid ?? null,
      1000,
      () => clock.now,
    );
    assert.deepEqual(table.ports(), [port]);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    return { table, clock };
  }

  it('answers from one read per interval, and a listener gone shows once the interval passed', async (t) => {
    const { table, clock } = await tableOfKilledListener(t, 8123);
    assert.deepEqual(table.ports(), [8123], 'the same interval answers from the same read');
    clock.now = 1000;
    await pollUntil(() => table.ports().length === 0, 'the gone listener to leave the table');
  });

  it('a read older than four intervals is never answered: the table is read again at once', async (t) => {
    const { table, clock } = await tableOfKilledListener(t, 8124);
    clock.now = 4000;
    assert.deepEqual(table.ports(), [], 'an old read is not served while a new one is made');
  });

  it('never answers with the host’s own listeners, whatever pid it is given', async (t) => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.after(() => server.close());
    const hostPort = (server.address() as { port: number }).port;
    const table = new ListeningTable(() => process.pid, 0);
    assert.deepEqual(table.ports(), []);
    assert.ok(!table.portsOf([process.pid]).includes(hostPort));
  });
});
