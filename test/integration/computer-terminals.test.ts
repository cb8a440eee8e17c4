import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { TerminalChunk } from '../../src/computer/terminals/terminal.js';
import { isPaddockError } from '../../src/shared/errors.js';
import { pollUntil } from '../helpers/poll.js';
import {
  type Call,
  codeOf,
  launchRunning,
  sandboxProcesses,
  toolCaller,
  withComputer,
} from '../unit/computer/fixture.js';

/** Reads a terminal by cursor until `pattern` shows up in what was read; returns text and cursor. */
async function readUntil(
  call: Call,
  terminalId: string,
  cursor: string | undefined,
  pattern: RegExp,
  what: string,
): Promise<{ text: string; cursor: string }> {
  let text = '';
  let at = cursor;
  try {
    return await pollUntil(
      async () => {
        for (;;) {
          const r = await call('read_terminal_output', { terminalId, cursor: at, byteLimit: 65536 });
          text += String(r.output);
          at = String(r.nextCursor);
          if (Number(r.moreBytes) === 0) break;
        }
        return pattern.test(text) ? { text, cursor: at! } : null;
      },
      what,
      20_000,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}; read so far: ${JSON.stringify(text.slice(-400))}`);
  }
}

const PROMPT = /PROMPT> $/;

/** A terminal with a recognisable prompt, and the cursor after that prompt. */
async function promptTerminal(call: Call, input: Record<string, unknown> = {}) {
  const created = await call('create_terminal', input);
  const terminalId = String(created.terminalId);
  await call('send_terminal_input', { terminalId, text: "PS1='PROMPT''> '\n" });
  const { cursor } = await readUntil(call, terminalId, undefined, PROMPT, 'the custom prompt');
  return { terminalId, cursor, created };
}

describe('computer terminals (bwrap)', { concurrency: false }, () => {
  it('drives a python3 REPL with send_terminal_input and reads its answers with read_terminal_output', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager, 'python');
      const call = toolCaller(manager, ctx);
      const { terminalId, cursor, created } = await promptTerminal(call);
      assert.equal(created.ready, true);
      assert.equal(created.active, true);
      await call('send_terminal_input', { terminalId, text: 'python3 -q\n' });
      const repl = await readUntil(call, terminalId, cursor, />>> $/, 'the python prompt');
      const sent = await call('send_terminal_input', { terminalId, text: 'print(6 * 7, "é")\n' });
      assert.deepEqual(sent, { terminalId, delivered: true, bytes: 19, key: null });
      const answer = await readUntil(call, terminalId, repl.cursor, /42 é\r\n>>> $/, 'the answer 42');
      assert.match(answer.text, /print\(6 \* 7, "é"\)/, 'the PTY echoes what was typed');
      await call('send_terminal_input', { terminalId, key: 'ctrl_d' });
      await readUntil(call, terminalId, answer.cursor, PROMPT, 'the shell prompt after ctrl_d');
      const list = await call('list_terminals');
      assert.equal(list.activeTerminalId, terminalId);
      assert.deepEqual(
        (list.terminals as Record<string, unknown>[]).map((t) => [t.id, t.ready, t.active, t.exited]),
        [[terminalId, true, true, false]],
      );
      const status = await call('get_computer_status');
      assert.equal((status.activeTerminal as Record<string, unknown>).id, terminalId);
      assert.ok((status.capabilities as string[]).includes('terminals'));
    });
  });

  it('ctrl_c interrupts a running sleep 100 and the prompt comes back', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const c = await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId, cursor } = await promptTerminal(call);
      await call('send_terminal_input', { terminalId, text: 'sleep 100; echo after-sleep-$?\n' });
      await pollUntil(() => sandboxProcesses(c, 'sleep 100').length === 1, 'sleep 100 to run', 10_000);
      const sent = await call('send_terminal_input', { terminalId, key: 'ctrl_c' });
      assert.equal(sent.bytes, 1);
      await pollUntil(() => sandboxProcesses(c, 'sleep 100').length === 0, 'sleep to be interrupted', 10_000);
      const after = await readUntil(
        call,
        terminalId,
        cursor,
        /\^C[\s\S]*PROMPT> $/,
        'the prompt after ctrl_c',
      );
      assert.doesNotMatch(after.text, /after-sleep-\d/, 'ctrl_c interrupted the whole command line');
    });
  });

  it('keeps the newest output only: reading behind it answers OUTPUT_EXPIRED with an oldestCursor that reads on', async () => {
    await withComputer({ computer: { retentionBytes: 65_536 } }, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId, cursor } = await promptTerminal(call);
      const first = await call('read_terminal_output', { terminalId, byteLimit: 1 });
      await call('send_terminal_input', {
        terminalId,
        text: 'head -c 300000 /dev/zero | tr "\\0" x; echo; echo END-OF-FLOOD\n',
      });
      await pollUntil(
        () => manager.terminals.resolve(terminalId).terminal.output.endOffset > 300_000,
        'the flood',
        20_000,
      );
      let expired: unknown;
      try {
        await call('read_terminal_output', { terminalId, cursor: first.nextCursor });
      } catch (e) {
        expired = e;
      }
      assert.ok(isPaddockError(expired) && expired.code === 'OUTPUT_EXPIRED', String(expired));
      const oldest = String(expired.details.oldestCursor);
      const resumed = await call('read_terminal_output', { terminalId, cursor: oldest, byteLimit: 100 });
      assert.match(String(resumed.output), /^x+$/);
      await readUntil(
        call,
        terminalId,
        oldest,
        /END-OF-FLOOD\r\n(\x1b\[\?2004h)?PROMPT> $/,
        'the end of the flood',
      );
      assert.equal(await codeOf(call('read_terminal_output', { terminalId, cursor })), 'OUTPUT_EXPIRED');
      assert.ok(manager.terminals.resolve(terminalId).terminal.output.capacityBytes <= 65_536);
    });
  });

  it('refuses text and key together, neither, an unknown key, malformed, unknown and stale terminal ids', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId } = await promptTerminal(call);
      const before = manager.terminals.resolve(terminalId).terminal.output.endOffset;
      assert.equal(
        await codeOf(call('send_terminal_input', { terminalId, text: 'echo both\n', key: 'enter' })),
        'INVALID_ARGUMENT',
      );
      assert.equal(await codeOf(call('send_terminal_input', { terminalId })), 'INVALID_ARGUMENT');
      assert.equal(await codeOf(call('send_terminal_input', { terminalId, key: 'f13' })), 'INVALID_ARGUMENT');
      assert.equal(
        await codeOf(call('send_terminal_input', { terminalId, text: 'x'.repeat(65_537) })),
        'INVALID_ARGUMENT',
      );
      assert.equal(
        manager.terminals.resolve(terminalId).terminal.output.endOffset,
        before,
        'nothing was typed',
      );
      assert.equal(await codeOf(call('switch_terminal', { terminalId: 'term1' })), 'INVALID_ARGUMENT');
      assert.equal(await codeOf(call('read_terminal_output', { terminalId: 'g1.job1' })), 'INVALID_ARGUMENT');
      const unknown = terminalId.replace(/term\d+$/, 'term99');
      assert.equal(
        await codeOf(call('send_terminal_input', { terminalId: unknown, text: 'x' })),
        'NOT_FOUND',
      );

      await launchRunning(manager);
      for (const [tool, input] of [
        ['send_terminal_input', { terminalId, key: 'enter' }],
        ['read_terminal_output', { terminalId }],
        ['switch_terminal', { terminalId }],
      ] as const) {
        assert.equal(await codeOf(call(tool, input)), 'STALE_GENERATION', tool);
      }
      assert.deepEqual((await call('list_terminals')).terminals, []);
      assert.equal((await call('get_computer_status')).activeTerminal, null);
    });
  });

  it('creates terminals that activate unless activate:false, switches between them, and replays a requestId', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      let changes = 0;
      const sub = manager.terminals.onChange(() => changes++);
      const a = await call('create_terminal', { requestId: 'first' });
      const again = await call('create_terminal', { requestId: 'first' });
      assert.deepEqual(again, a, 'the same requestId returns the same terminal');
      assert.equal(
        await codeOf(call('create_terminal', { requestId: 'first', activate: false })),
        'IDEMPOTENCY_CONFLICT',
      );
      const b = await call('create_terminal', { activate: false });
      assert.equal(b.active, false);
      assert.equal((await call('list_terminals')).activeTerminalId, a.terminalId);
      const switched = await call('switch_terminal', { terminalId: b.terminalId });
      assert.deepEqual(switched, {
        terminalId: b.terminalId,
        active: true,
        previousTerminalId: a.terminalId,
      });
      assert.equal((await call('list_terminals')).activeTerminalId, b.terminalId);
      assert.equal(((await call('list_terminals')).terminals as unknown[]).length, 2);
      assert.ok(changes >= 3, `the dock heard ${changes} changes`);
      sub.dispose();
    });
  });

  it("starts the guest account's interactive shell in /workspace with TERM=xterm-256color and LANG=C.UTF-8, and follows resizes", async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId, cursor } = await promptTerminal(call);
      await manager.terminals.resize(terminalId, 91, 17);
      await call('send_terminal_input', {
        terminalId,
        text: 'case $- in *i*) echo INTERACTIVE;; esac; echo "$TERM|$LANG|$PWD|$(id -un)"; stty size\n',
      });
      const r = await readUntil(
        call,
        terminalId,
        cursor,
        /17 91\r\n(\x1b\[\?2004h)?PROMPT> $/,
        'the environment report',
      );
      assert.match(r.text, /\rINTERACTIVE\r\n/);
      assert.match(r.text, /\r\nxterm-256color\|C\.UTF-8\|\/workspace\|agent\r\n/);
    });
  });

  it('serves the dock: replays retained output to a subscriber, then delivers live output in order', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const source = manager.terminals;
      const { terminalId, cursor } = await promptTerminal(call);
      const chunks: TerminalChunk[] = [];
      const sub = source.subscribe(terminalId, undefined, (c) => chunks.push(c));
      assert.match(chunks.map((c) => c.data).join(''), /PROMPT> $/, 'the retained output is replayed first');
      await source.write(terminalId, 'echo live-$((40+2))\r', { source: 'person', who: 'dock:owner' });
      await pollUntil(() => /live-42\r\n/.test(chunks.map((c) => c.data).join('')), 'live output', 10_000);
      sub.dispose();
      const last = chunks.at(-1)!.cursor;
      const tail = await call('read_terminal_output', { terminalId, cursor: last });
      assert.equal(typeof tail.output, 'string', 'a dock cursor is a read_terminal_output cursor');
      const resumed: TerminalChunk[] = [];
      source.subscribe(terminalId, cursor, (c) => resumed.push(c)).dispose();
      assert.match(
        resumed.map((c) => c.data).join(''),
        /^echo live/,
        'a subscriber resumes after its cursor',
      );
    });
  });

  it("a terminal printing without end keeps answering ctrl_c and its retention bounded; a relaunch kills the terminal's processes", async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      const c = await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId, cursor } = await promptTerminal(call);
      const terminal = manager.terminals.resolve(terminalId).terminal;
      await call('send_terminal_input', { terminalId, text: 'yes flood\n' });
      await pollUntil(() => terminal.output.endOffset > 20_000_000, '20 MB of output', 60_000);
      await call('send_terminal_input', { terminalId, key: 'ctrl_c' });
      await pollUntil(() => sandboxProcesses(c, 'yes flood').length === 0, 'yes to be interrupted', 10_000);
      await pollUntil(
        () => /PROMPT> $/.test(terminal.output.read(terminal.output.endOffset - 64, 64).bytes.toString()),
        'the prompt after the flood',
        10_000,
      );
      assert.ok(terminal.output.endOffset - terminal.output.startOffset <= terminal.output.capacityBytes);
      assert.equal(await codeOf(call('read_terminal_output', { terminalId, cursor })), 'OUTPUT_EXPIRED');

      await call('send_terminal_input', { terminalId, text: 'sleep 1000 &\n' });
      const [pid] = await pollUntil(
        () => {
          const pids = sandboxProcesses(c, 'sleep 1000');
          return pids.length === 1 ? pids : null;
        },
        'a background sleep in the terminal',
        10_000,
      );
      const cgroups = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
      if (c.instance?.familyMechanism === 'cgroup')
        assert.match(
          cgroups,
          new RegExp(`/g${c.generation}(\\n|$)`, 'm'),
          "it runs in the computer's own cgroup",
        );
      await launchRunning(manager);
      await pollUntil(
        () => !existsSync(`/proc/${pid}`),
        "the relaunch to kill the terminal's process",
        10_000,
      );
      assert.equal(await codeOf(call('read_terminal_output', { terminalId })), 'STALE_GENERATION');
    });
  });
});
