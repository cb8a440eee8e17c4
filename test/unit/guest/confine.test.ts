import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CONFINE_SINKS, confinedArgv, confineTokens, interpretersOf } from '../../../src/guest/confine.js';

const PATH = '/usr/local/bin:/usr/bin:/bin';
const LOADER = realpathSync('/lib64/ld-linux-x86-64.so.2');

function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-confine-tokens-'));
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

describe('the confined program’s rule tokens', () => {
  it('names a dynamic program by its real path with the loader its ELF header asks for', async () => {
    assert.deepEqual(await interpretersOf('/usr/bin/git', []), ['/lib64/ld-linux-x86-64.so.2']);
    const tokens = await confineTokens({ execute: ['/usr/bin/git'], write: [] }, { searchPath: PATH });
    assert.ok(tokens.includes(`x${realpathSync('/usr/bin/git')}`));
    assert.ok(tokens.includes(`x${LOADER}`));
  });

  it('follows a #! line, and for env NAME finds NAME on the PATH: npm brings env and node', async () => {
    await withDir(async (dir) => {
      const script = join(dir, 'tool');
      writeFileSync(script, '#!/usr/bin/env -S node --no-warnings\nconsole.log(1)\n');
      chmodSync(script, 0o755);
      const tokens = await confineTokens({ execute: [script], write: [] }, { searchPath: PATH });
      for (const path of [script, '/usr/bin/env', '/usr/bin/node', '/lib64/ld-linux-x86-64.so.2'])
        assert.ok(tokens.includes(`x${realpathSync(path)}`), `${path} in ${tokens.join(' ')}`);
      writeFileSync(script, '#!/bin/sh -e\n');
      assert.deepEqual(await interpretersOf(script, []), ['/bin/sh']);
      writeFileSync(script, 'plain text');
      assert.deepEqual(await interpretersOf(script, []), []);
    });
  });

  it('grants a write root only without a link on its path, as a directory or one file, plus the sinks', async () => {
    await withDir(async (dir) => {
      const real = realpathSync(dir);
      mkdirSync(join(real, 'root'));
      writeFileSync(join(real, 'file'), '');
      symlinkSync(join(real, 'root'), join(real, 'linked'));
      const tokens = await confineTokens(
        {
          execute: [],
          write: [join(real, 'root'), join(real, 'file'), join(real, 'linked'), join(real, 'missing')],
        },
        { searchPath: PATH },
      );
      assert.deepEqual(tokens, [
        `w${join(real, 'root')}`,
        `f${join(real, 'file')}`,
        ...CONFINE_SINKS.map((sink) => `f${sink}`),
      ]);
    });
  });

  it('with a tool channel adds its directories and mkfifo, and leaves out executables that do not exist', async () => {
    await withDir(async (dir) => {
      const channel = join(realpathSync(dir), '7');
      mkdirSync(channel);
      mkdirSync(`${channel}-sh`);
      const tokens = await confineTokens(
        { execute: ['/no/such/program'], write: [] },
        { searchPath: PATH, channelDir: channel },
      );
      assert.ok(tokens.includes(`w${channel}`) && tokens.includes(`w${channel}-sh`));
      assert.ok(tokens.includes(`x${realpathSync('/usr/bin/mkfifo')}`));
      assert.ok(!tokens.some((t) => t.includes('/no/such')));
      assert.deepEqual(confinedArgv('/opt/l', ['xa'], ['p', 'q']), [
        '/opt/l',
        '--confine',
        'xa',
        '--',
        'p',
        'q',
      ]);
    });
  });
});
