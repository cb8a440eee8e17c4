/**
 * What the host accepts from the guest agent in a control frame: exactly the messages of the
 * protocol, whichever member is tried first, and nothing more (a process in the computer may
 * have tampered with the agent).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGuestMessage } from '../../../src/computer/link/guest-client.js';
import { guestMessageSchema } from '../../../src/guest/protocol.js';

const valid: unknown[] = [
  { t: 'reply', id: 1, ok: true, value: { pid: 4 } },
  { t: 'reply', id: 2, ok: false, error: { code: 'NOT_FOUND', message: 'gone' } },
  { t: 'exit', stream: 7, exitCode: 0, signal: null },
  { t: 'channel.request', stream: 7, nonce: 'n', frame: { kind: 'request', id: 'p1', payload: '{}' } },
  { t: 'log', level: 'warn', message: 'hi' },
];

const forged: unknown[] = [
  null,
  42,
  'reply',
  {},
  { t: 'reply', id: 1, ok: 'yes', value: 1 },
  { t: 'reply', id: 0, ok: true, value: 1 },
  { t: 'reply', id: 1, ok: true, value: 1, extra: true },
  { t: 'reply', id: 1, ok: false, error: { code: 'NOT_A_CODE', message: 'x' } },
  { t: 'reply', id: 1, ok: false, value: 1 },
  { t: 'exit', stream: 7, exitCode: 0 },
  { t: 'exit', stream: 7, exitCode: 0, signal: null, pid: 1 },
  { t: 'channel.request', stream: 7, nonce: 'n', frame: { kind: 'request', id: 'bad id', payload: '' } },
  { t: 'shutdown' },
];

describe('guest control messages', () => {
  it('accepts every message of the protocol, as the full union does', () => {
    for (const m of valid) {
      assert.equal(parseGuestMessage(m).success, true, JSON.stringify(m));
      assert.equal(guestMessageSchema.safeParse(m).success, true);
    }
  });

  it('refuses forged messages (wrong kinds, extra keys, bad ids, unknown codes), as the full union does', () => {
    for (const m of forged) {
      assert.equal(parseGuestMessage(m).success, false, JSON.stringify(m));
      assert.equal(guestMessageSchema.safeParse(m).success, false);
    }
  });
});
