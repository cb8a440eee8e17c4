/**
 * Who typed what in a shared terminal of a real sandbox: the agent's send_terminal_input and
 * the person's keystrokes land in the terminal's journal with their source; a person who takes
 * control makes the agent's input fail without typing anything; the session exports as an
 * asciicast v2 file that asciinema itself reads and plays.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pollUntil } from '../helpers/poll.js';
import {
  codeOf,
  launchRunning,
  readTerminalUntil,
  toolCaller,
  withComputer,
} from '../unit/computer/fixture.js';

const PERSON = { source: 'person' as const, who: 'dock:owner' };

describe('the journal of a shared terminal (bwrap)', { concurrency: false }, () => {
  it('records each input with its source, in order, at the output offset it was typed at', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId } = (await call('create_terminal')) as { terminalId: string };
      await call('send_terminal_input', { terminalId, text: 'echo agent-$((20+1))\n' });
      const first = await readTerminalUntil(call, terminalId, /agent-21/, 'the agent’s command');
      // the person types key by key, as xterm.js sends it
      for (const key of 'echo person-$((2*3))\r') await manager.terminals.write(terminalId, key, PERSON);
      await readTerminalUntil(call, terminalId, /person-6/, 'the person’s command', first.cursor);
      const caller = ctx().caller.caller;
      const inputs = manager.terminals.journal(terminalId).filter((e) => e.kind === 'input');
      assert.deepEqual(
        inputs.map((e) => [e.source, e.who, e.text]),
        [
          ['agent', caller, 'echo agent-$((20+1))\r'],
          ['person', 'dock:owner', 'echo person-$((2*3))\r'],
        ],
        'the keystrokes of one line are one entry',
      );
      assert.ok(inputs[1]!.offset > inputs[0]!.offset, 'the person typed after the agent’s output');
      assert.deepEqual(
        manager.terminals.journal(terminalId, { source: 'person' }).map((e) => e.who),
        ['dock:owner'],
      );
    });
  });

  it('while a person holds the terminal the agent’s input is refused and not typed; list_terminals shows who holds it', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId } = (await call('create_terminal')) as { terminalId: string };
      manager.terminals.hold(terminalId, 'dock:owner');
      const listed = (await call('list_terminals')).terminals as { id: string; heldBy: string | null }[];
      assert.equal(listed.find((t) => t.id === terminalId)?.heldBy, 'dock:owner');
      const refused = call('send_terminal_input', { terminalId, text: 'echo sneaky-$((1+1))\n' });
      assert.equal(await codeOf(refused), 'TERMINAL_HELD_BY_PERSON');
      await manager.terminals.write(terminalId, 'echo mine-$((4+4))\r', PERSON);
      const seen = await readTerminalUntil(call, terminalId, /mine-8/, 'the person’s command while holding');
      assert.doesNotMatch(seen.text, /sneaky/, 'nothing of the refused input reached the terminal');
      manager.terminals.release(terminalId, 'dock:owner');
      assert.equal(
        ((await call('list_terminals')).terminals as { heldBy: string | null }[])[0]?.heldBy,
        null,
      );
      await call('send_terminal_input', { terminalId, text: 'echo agent-again-$((5+5))\n' });
      await readTerminalUntil(call, terminalId, /agent-again-10/, 'the agent typing again', seen.cursor);
      assert.deepEqual(
        manager.terminals
          .journal(terminalId)
          .map((e) => `${e.kind}:${e.source ?? ''}`)
          .filter((k) => !k.startsWith('resize')),
        ['hold:person', 'input:person', 'release:person', 'input:agent'],
        'a refused input leaves no entry',
      );
    });
  });

  it('a hold lapses on its own when the person stops typing', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId } = (await call('create_terminal')) as { terminalId: string };
      manager.terminals.hold(terminalId, 'dock:owner', 50);
      await readTerminalUntil(call, terminalId, /./, 'any output (the prompt)');
      await pollUntil(
        async () =>
          ((await call('list_terminals')).terminals as { heldBy: string | null }[])[0]?.heldBy === null,
        'the hold to lapse',
        10_000,
      );
      await call('send_terminal_input', { terminalId, text: 'true\n' });
    });
  });

  it('exports the session as asciicast v2 with input and marker events, which asciinema reads and plays', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const { terminalId } = (await call('create_terminal')) as { terminalId: string };
      await call('send_terminal_input', { terminalId, text: 'echo from-agent-$((6*7))\n' });
      const a = await readTerminalUntil(call, terminalId, /from-agent-42/, 'the agent’s output');
      await manager.terminals.resize(terminalId, 100, 30, 'dock:owner');
      await manager.terminals.write(terminalId, 'echo from-person-é-$((2+3))\r', PERSON);
      await readTerminalUntil(call, terminalId, /from-person-é-5/, 'the person’s output', a.cursor);
      const cast = manager.terminals.asciicast(terminalId);
      const [headerLine, ...eventLines] = cast.trimEnd().split('\n');
      const header = JSON.parse(headerLine!);
      assert.deepEqual([header.version, header.width, header.height], [2, 120, 32]);
      const events = eventLines.map((l) => JSON.parse(l) as [number, string, string]);
      for (let i = 1; i < events.length; i++)
        assert.ok(events[i]![0] >= events[i - 1]![0], 'times never go back');
      const of = (code: string) => events.filter((e) => e[1] === code).map((e) => e[2]);
      assert.deepEqual(of('i'), ['echo from-agent-$((6*7))\r', 'echo from-person-é-$((2+3))\r']);
      assert.deepEqual(of('m'), [`agent (${ctx().caller.caller}) typed`, 'person (dock:owner) typed']);
      assert.deepEqual(of('r'), ['100x30']);
      assert.match(of('o').join(''), /from-agent-42[\s\S]*from-person-é-5/);

      const dir = mkdtempSync(join(tmpdir(), 'paddock-cast-'));
      try {
        const file = join(dir, 'session.cast');
        writeFileSync(file, cast);
        // asciinema reads keys from /dev/tty while it plays: give it a pseudo-terminal
        const played = spawnSync('script', ['-qec', `asciinema cat ${file}`, '/dev/null'], {
          encoding: 'utf8',
          timeout: 30_000,
        });
        assert.equal(played.status, 0, played.stderr);
        assert.match(played.stdout, /from-agent-42[\s\S]*from-person-é-5/, 'asciinema plays the output back');
        // the interpreter asciinema is installed for (its own reader)
        const parsed = spawnSync(
          '/usr/bin/python3',
          [
            '-c',
            [
              'import sys',
              'from asciinema.asciicast import v2',
              'f = open(sys.argv[1], encoding="utf-8")',
              'first = f.readline()',
              'with v2.open_from_file(first, f) as c:',
              '    kinds = [e[1] for e in c.events()]',
              'print(len(kinds), sorted(set(kinds)))',
            ].join('\n'),
            file,
          ],
          { encoding: 'utf8' },
        );
        assert.equal(parsed.status, 0, parsed.stderr);
        assert.match(parsed.stdout, /\['i', 'm', 'o', 'r'\]/, 'asciinema’s own reader takes every event');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
