import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ComputerManager } from '../../src/computer/manager.js';
import { launchRunning, pollUntil, toolCaller, withComputer } from '../unit/computer/fixture.js';

async function run(manager: ComputerManager, script: string, timeoutMs = 30_000) {
  const r = await manager.runCommand({ script, waitMs: 10_000, timeoutMs });
  return pollUntil(
    () => {
      const now = manager.readJob(r.jobId, undefined, 65_536);
      return now.terminationObserved ? now : null;
    },
    timeoutMs,
    `job ${r.jobId}`,
  );
}

const asRoot = process.getuid?.() === 0;

describe('a job cannot take over the guest agent', { concurrency: false }, () => {
  it('a job can neither signal the agent, nor read or write its memory, descriptors or environment, nor open its inspector', async (t) => {
    if (!asRoot) {
      t.skip('only a server running as root can give the agent an account of its own');
      return;
    }
    await withComputer({}, async ({ manager }) => {
      const c = await launchRunning(manager);
      const agent = c.hello!.pid;
      const script = [
        `A=${agent}`,
        'for s in USR1 STOP CONT TERM KILL; do kill -$s $A 2>/dev/null && echo "signalled $s"; done',
        'for f in mem environ maps; do cat /proc/$A/$f >/dev/null 2>&1 && echo "read $f"; done',
        'ls /proc/$A/fd >/dev/null 2>&1 && echo "listed fd"',
        'for n in 0 1 2; do (echo x > /proc/$A/fd/$n) 2>/dev/null && echo "wrote fd $n"; done',
        `python3 -c "open('/proc/$A/mem', 'r+b')" 2>/dev/null && echo "opened mem for writing"`,
        // the inspector would listen on the sandbox's loopback after SIGUSR1
        `python3 -c "import socket; socket.create_connection(('127.0.0.1', 9229), 2)" 2>/dev/null && echo "inspector open"`,
        'echo end',
      ].join('\n');
      const r = await run(manager, script);
      assert.equal(r.stdout, 'end\n', `the job reached the agent:\n${r.stdout}${r.stderr}`);
      const again = await run(manager, 'echo alive');
      assert.equal(again.stdout, 'alive\n');
      assert.equal(manager.status().lifecycle, 'running');
    });
  });

  it('runs jobs and terminals as the guest account and the agent as an account of its own', async (t) => {
    if (!asRoot) {
      t.skip('only a server running as root can give the agent an account of its own');
      return;
    }
    await withComputer({}, async ({ manager }) => {
      const c = await launchRunning(manager);
      const r = await run(manager, `id -u; stat -c %u /proc/${c.hello!.pid}; stat -c %u /workspace`);
      assert.deepEqual(r.stdout.trim().split('\n'), ['1000', '0', '1000']);
    });
  });

  it("a job can neither open a terminal's PTY nor reopen it through the descriptors of the terminal's processes", async (t) => {
    if (!asRoot) {
      t.skip('only a server running as root can give the agent an account of its own');
      return;
    }
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const terminalId = String((await call('create_terminal', {})).terminalId);
      await call('send_terminal_input', { terminalId, text: 'echo "TTY=$(tty)"; sleep 60\n' });
      let text = '';
      let cursor: string | undefined;
      await pollUntil(
        async () => {
          const r = await call('read_terminal_output', { terminalId, cursor, byteLimit: 65_536 });
          text += String(r.output);
          cursor = String(r.nextCursor);
          return /TTY=\/dev\/pts\/\d+/.test(text);
        },
        20_000,
        'the terminal to name its tty',
      );
      const tty = /TTY=(\/dev\/pts\/\d+)/.exec(text)![1]!;
      const script = [
        `test -c ${tty} && echo "sees ${tty}"`,
        `(exec 3<>${tty}) 2>/dev/null && echo "opened ${tty}"`,
        `(exec 3<${tty}) 2>/dev/null && echo "opened ${tty} for reading"`,
        // the terminal's shell and its sleep hold the PTY as fds 0-2
        'for p in /proc/[0-9]*; do for n in 0 1 2; do case "$(readlink $p/fd/$n 2>/dev/null)" in /dev/pts/*) (exec 3<>$p/fd/$n) 2>/dev/null && echo "reopened $p/fd/$n";; esac; done; done',
        'echo end',
      ].join('\n');
      const r = await run(manager, script);
      assert.equal(r.stdout, `sees ${tty}\nend\n`, r.stdout + r.stderr);
      // the terminal itself still works
      await call('send_terminal_input', { terminalId, key: 'ctrl_c' });
      await call('send_terminal_input', { terminalId, text: 'echo STILL-HERE\n' });
      await pollUntil(
        async () => {
          const o = await call('read_terminal_output', { terminalId, cursor, byteLimit: 65_536 });
          text += String(o.output);
          cursor = String(o.nextCursor);
          return /^STILL-HERE\r?$/m.test(text);
        },
        20_000,
        'the terminal to answer after the attempt',
      );
    });
  });

  it('gives jobs and terminals no descriptor beyond 0, 1 and 2', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      // `ls` opens the listed directory itself: 3 is its own
      const job = await run(manager, 'ls /proc/self/fd | sort -n | tr "\\n" " "');
      assert.equal(job.stdout, '0 1 2 3 ');
      const terminalId = String((await call('create_terminal', {})).terminalId);
      await call('send_terminal_input', {
        terminalId,
        text: 'echo "FDS=$(ls /proc/self/fd | sort -n | tr "\\n" " ")."\n',
      });
      let text = '';
      let cursor: string | undefined;
      await pollUntil(
        async () => {
          const r = await call('read_terminal_output', { terminalId, cursor, byteLimit: 65_536 });
          text += String(r.output);
          cursor = String(r.nextCursor);
          return /FDS=[0-9 ]+\./.test(text);
        },
        20_000,
        'the terminal to list its descriptors',
      );
      // in $(…) the listing's stdout is the substitution's pipe; 3 is ls's own
      assert.match(text, /FDS=0 1 2 3 \./);
    });
  });
});
