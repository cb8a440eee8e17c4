import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { terminalId } from '../../../src/computer/ids.js';
import {
  encodeTerminalCursor,
  Terminal,
  type TerminalChunk,
} from '../../../src/computer/terminals/terminal.js';
import { TERMINAL_KEYS, terminalInputBytes } from '../../../src/computer/tools/terminal-tools.js';
import { isPaddockError } from '../../../src/shared/errors.js';

function terminal(retentionBytes = 4096): Terminal {
  return new Terminal(terminalId(2, 3), 2, 3, 0x4000_0003, 'Terminal 3', retentionBytes, {
    cols: 80,
    rows: 24,
  });
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return isPaddockError(e) ? e.code : String(e);
  }
}

describe('terminal input and output', () => {
  it('maps every key of the enum to the bytes a terminal sends and presses Enter for each newline', () => {
    assert.deepEqual(Object.keys(TERMINAL_KEYS), [
      'enter',
      'ctrl_c',
      'ctrl_d',
      'ctrl_z',
      'tab',
      'escape',
      'backspace',
      'up',
      'down',
      'left',
      'right',
    ]);
    const bytes = Object.fromEntries(
      Object.keys(TERMINAL_KEYS).map((k) => [
        k,
        Buffer.from(terminalInputBytes(undefined, k).data).toString('hex'),
      ]),
    );
    assert.deepEqual(bytes, {
      enter: '0d',
      ctrl_c: '03',
      ctrl_d: '04',
      ctrl_z: '1a',
      tab: '09',
      escape: '1b',
      backspace: '7f',
      up: '1b5b41',
      down: '1b5b42',
      left: '1b5b44',
      right: '1b5b43',
    });
    assert.equal(terminalInputBytes('ls\nls -la\r\n', undefined).data, 'ls\rls -la\r');
    for (const [text, key] of [
      ['ls\n', 'enter'],
      [undefined, undefined],
      ['', undefined],
      [undefined, 'f1'],
      [undefined, '__proto__'],
      ['x'.repeat(65_537), undefined],
    ] as const) {
      assert.equal(
        codeOf(() => terminalInputBytes(text, key)),
        'INVALID_ARGUMENT',
        `${text?.slice(0, 8)} ${key}`,
      );
    }
  });

  it('never ends a read or a live chunk inside a UTF-8 character', () => {
    const t = terminal();
    const chunks: TerminalChunk[] = [];
    t.subscribe(undefined, (c) => chunks.push(c));
    const euro = Buffer.from('€');
    t.append(Buffer.concat([Buffer.from('a'), euro.subarray(0, 2)]));
    t.append(euro.subarray(2));
    assert.deepEqual(
      chunks.map((c) => c.data),
      ['a', '€'],
    );
    const first = t.read(undefined, 2);
    assert.equal(first.output, 'a');
    const rest = t.read(first.nextCursor, 10);
    assert.equal(rest.output, '€');
    assert.equal(rest.moreBytes, 0);
    assert.equal(
      rest.nextCursor,
      chunks.at(-1)!.cursor,
      'live cursors and read cursors are the same positions',
    );
  });

  it('answers OUTPUT_EXPIRED with an oldestCursor behind retention, and replays from there with a gap to a late subscriber', () => {
    // 6000 bytes into 4095: the oldest kept byte is the second half of an é.
    const t = terminal(4095);
    const start = t.read(undefined, 1).nextCursor;
    t.append(Buffer.from('é'.repeat(3000)));
    let expired: unknown;
    try {
      t.read(encodeTerminalCursor('g2.term3', 0), 100);
    } catch (e) {
      expired = e;
    }
    assert.ok(isPaddockError(expired) && expired.code === 'OUTPUT_EXPIRED');
    const oldest = String(expired.details.oldestCursor);
    const resumed = t.read(oldest, 10);
    assert.match(resumed.output, /^é+$/, 'the oldest cursor starts on a character boundary');
    assert.equal(
      codeOf(() => t.read(start, 1)),
      'OUTPUT_EXPIRED',
    );
    assert.equal(
      codeOf(() => t.read(encodeTerminalCursor('g2.term4', 0), 1)),
      'INVALID_ARGUMENT',
    );
    assert.equal(
      codeOf(() => t.read(encodeTerminalCursor('g2.term3', 999_999), 1)),
      'INVALID_ARGUMENT',
    );
    assert.equal(
      codeOf(() => t.read('garbage', 1)),
      'INVALID_ARGUMENT',
    );
    const replay: TerminalChunk[] = [];
    t.subscribe(start, (c) => replay.push(c));
    assert.equal(replay[0]!.gap, true);
    assert.equal(replay.map((c) => c.data).join(''), 'é'.repeat(2047));
  });
});
