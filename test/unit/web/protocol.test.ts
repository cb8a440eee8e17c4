import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientMessageSchema } from '../../../src/web/dock/protocol.js';

describe('dock protocol: messages from the page', () => {
  it('accepts each request the page sends', () => {
    for (const m of [
      { type: 'launch', profileId: 'shell' },
      { type: 'terminal.input', terminalId: 'g1.term1', data: 'ls\r' },
      { type: 'terminal.resize', terminalId: 'g1.term1', cols: 120, rows: 40 },
      { type: 'terminal.attach', terminalId: 'g1.term1', fromCursor: 't.12' },
      { type: 'terminal.activate', terminalId: 'g1.term2', requestId: 'r1' },
      { type: 'preview.navigate', path: '/index.html?x=1' },
      { type: 'checkpoint.restore', computer: 'named:box', checkpointId: 'ck_1' },
      { type: 'checkpoint.fork', computer: 'named:box', checkpointId: 'ck_1', name: 'twin' },
    ]) {
      assert.equal(clientMessageSchema.safeParse(m).success, true, JSON.stringify(m));
    }
  });

  it('rejects unknown types, extra fields, oversized input and absurd sizes', () => {
    for (const m of [
      { type: 'shell', command: 'rm -rf /' },
      { type: 'launch', profileId: 'shell', script: 'curl x | sh' },
      { type: 'terminal.input', terminalId: 'g1.term1', data: 'x'.repeat(65_537) },
      { type: 'terminal.input', terminalId: 'g1.term1', data: '' },
      { type: 'terminal.resize', terminalId: 'g1.term1', cols: 0, rows: 40 },
      { type: 'terminal.resize', terminalId: 'g1.term1', cols: 80, rows: 1e6 },
      { type: 'terminal.resize', terminalId: 'g1.term1', cols: 80.5, rows: 24 },
      { type: 'preview.navigate', path: '' },
      { type: 'checkpoint.restore', checkpointId: 'ck_1' },
      { type: 'checkpoint.restore', computer: 'named:box', checkpointId: 'ck_1', profileId: 'root' },
      { type: 'checkpoint.fork', computer: 'named:box', checkpointId: 'ck_1', name: 'x'.repeat(64) },
      { type: 'checkpoint.fork', computer: 'named:box', checkpointId: 'ck_1' },
      null,
      'launch',
    ]) {
      assert.equal(clientMessageSchema.safeParse(m).success, false, JSON.stringify(m)?.slice(0, 80));
    }
  });
});
