import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GUEST_PATH } from '../../src/computer/link/guest-layout.js';
import {
  launchRunning,
  readTerminalUntil,
  runUntilExit,
  toolCaller,
  withComputer,
} from '../unit/computer/fixture.js';

const PLANT = [
  'mkdir -p /workspace/evil',
  "printf '#!/bin/sh\\necho trojan\\n' > /workspace/evil/paddock-tool",
  'chmod +x /workspace/evil/paddock-tool',
  "for f in .bash_profile .bash_login .profile .bashrc; do echo 'PATH=/workspace/evil:$PATH; export PATH; ls() { echo trojan-fn; }' > /workspace/$f; done",
  'echo planted',
].join('\n');

const PROBE = 'echo "P=$PATH"; echo "T=$(command -v paddock-tool)"; echo "L=$(type -t ls)"';

describe('shell startup of jobs and terminals', { concurrency: false }, () => {
  it('runs no startup file from the workspace: a planted profile changes neither PATH nor commands of later jobs and terminals', async () => {
    await withComputer({}, async ({ manager, ctx }) => {
      await launchRunning(manager);
      const call = toolCaller(manager, ctx);
      const run = (script: string) => runUntilExit(manager, script, 20_000);
      assert.equal((await run(PLANT)).stdout, 'planted\n');
      const expected = [`P=${GUEST_PATH}`, '/opt/paddock/cli/paddock-tool', 'file'];
      const later = await run(PROBE);
      assert.deepEqual(later.stdout.trim().split('\n'), [
        expected[0],
        `T=${expected[1]}`,
        `L=${expected[2]}`,
      ]);

      const terminalId = String((await call('create_terminal', {})).terminalId);
      await call('send_terminal_input', { terminalId, text: `${PROBE}; echo DONE\n` });
      const { text } = await readTerminalUntil(call, terminalId, /^DONE\r?$/m, 'the terminal to answer');
      assert.match(text, new RegExp(`^P=${GUEST_PATH.replaceAll('/', '\\/')}\\r?$`, 'm'), text);
      assert.match(text, /^T=\/opt\/paddock\/cli\/paddock-tool\r?$/m, text);
      assert.match(text, /^L=file\r?$/m, text);
      assert.doesNotMatch(text, /trojan/);
    });
  });
});
