import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  launchRunning,
  readTerminalUntil,
  runUntilExit as run,
  toolCaller,
  withComputer,
} from '../unit/computer/fixture.js';

const asRoot = process.getuid?.() === 0;
const needsRoot = asRoot
  ? {}
  : { skip: 'only a server running as root can give the agent an account of its own' };

describe('a job cannot take over the guest agent', { concurrency: false }, () => {
  it(
    'a job can neither signal the agent, nor read or write its memory, descriptors or environment, nor open its inspector',
    needsRoot,
    async () => {
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
    },
  );

  it(
    'runs jobs and terminals as the guest account and the agent as an account of its own',
    needsRoot,
    async () => {
      await withComputer({}, async ({ manager }) => {
        const c = await launchRunning(manager);
        const r = await run(manager, `id -u; stat -c %u /proc/${c.hello!.pid}; stat -c %u /workspace`);
        assert.deepEqual(r.stdout.trim().split('\n'), ['1000', '0', '1000']);
      });
    },
  );

  it(
    "a job can neither open a terminal's PTY nor reopen it through the descriptors of the terminal's processes",
    needsRoot,
    async () => {
      await withComputer({}, async ({ manager, ctx }) => {
        await launchRunning(manager);
        const call = toolCaller(manager, ctx);
        const terminalId = String((await call('create_terminal', {})).terminalId);
        await call('send_terminal_input', { terminalId, text: 'echo "TTY=$(tty)"; sleep 60\n' });
        const { text, cursor } = await readTerminalUntil(
          call,
          terminalId,
          /TTY=\/dev\/pts\/\d+/,
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
        await readTerminalUntil(
          call,
          terminalId,
          /^STILL-HERE\r?$/m,
          'the terminal to answer after the attempt',
          cursor,
        );
      });
    },
  );

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
      const { text } = await readTerminalUntil(
        call,
        terminalId,
        /FDS=[0-9 ]+\./,
        'the terminal to list its descriptors',
      );
      // in $(…) the listing's stdout is the substitution's pipe; 3 is ls's own
      assert.match(text, /FDS=0 1 2 3 \./);
    });
  });

  it(
    "a job cannot change another job's large script between its writing and its start",
    needsRoot,
    async () => {
      await withComputer({}, async ({ manager }) => {
        await launchRunning(manager);
        const spy = await manager.runCommand({
          script:
            'while [ ! -e /workspace/stop ]; do for f in /tmp/.paddock-job-*.sh /tmp/.paddock-channel/job-*.sh; do [ -f "$f" ] && echo "echo hijacked" >> "$f" 2>/dev/null; done; done',
          waitMs: 100,
          timeoutMs: 120_000,
        });
        // over the inline limit: the script travels as a file
        const big = `echo original\n# ${'x'.repeat(120_000)}\n`;
        for (let i = 0; i < 5; i++) {
          const r = await run(manager, big);
          assert.equal(r.stdout, 'original\n', `run ${i}: ${r.stdout}`);
        }
        await run(manager, 'touch /workspace/stop');
        await manager.cancelJob(spy.jobId).catch(() => undefined);
      });
    },
  );
});
