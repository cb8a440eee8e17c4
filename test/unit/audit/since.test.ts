import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSince } from '../../../src/audit/since.js';
import { PaddockError } from '../../../src/shared/errors.js';

const NOW = Date.UTC(2025, 0, 31, 12, 0, 0);

describe('parseSince', () => {
  it('reads durations back from now in seconds, minutes, hours, days and weeks', () => {
    assert.equal(parseSince('45s', NOW), NOW - 45_000);
    assert.equal(parseSince('30m', NOW), NOW - 30 * 60_000);
    assert.equal(parseSince('1h', NOW), NOW - 3_600_000);
    assert.equal(parseSince('2d', NOW), NOW - 2 * 86_400_000);
    assert.equal(parseSince('1w', NOW), NOW - 7 * 86_400_000);
    assert.equal(parseSince('500ms', NOW), NOW - 500);
    assert.equal(parseSince(' 1h30m ', NOW), NOW - 90 * 60_000);
    assert.equal(parseSince('0s', NOW), NOW);
  });

  it('uses the current time when none is given', () => {
    const before = Date.now();
    const value = parseSince('1h');
    assert.ok(value >= before - 3_600_000 && value <= Date.now() - 3_600_000);
  });

  it('reads ISO dates as UTC midnight and ISO date-times with their offset', () => {
    assert.equal(parseSince('2025-01-30'), Date.UTC(2025, 0, 30));
    assert.equal(parseSince('2025-01-30T08:15:00Z'), Date.UTC(2025, 0, 30, 8, 15));
    assert.equal(parseSince('2025-01-30T08:15:00.250Z'), Date.UTC(2025, 0, 30, 8, 15, 0, 250));
    assert.equal(parseSince('2025-01-30T08:15:00+01:00'), Date.UTC(2025, 0, 30, 7, 15));
    assert.equal(parseSince('2025-01-30 08:15Z'), Date.UTC(2025, 0, 30, 8, 15));
  });

  it('rejects anything else with INVALID_ARGUMENT that shows valid forms', () => {
    for (const bad of [
      '',
      'yesterday',
      '1',
      '1y',
      '-1h',
      '1.5h',
      'h',
      '1 h',
      '2025-02-30',
      '2025-13-01',
      '2025-01-30T25:00Z',
      'March 7',
      '1700000000000',
    ]) {
      assert.throws(
        () => parseSince(bad, NOW),
        (e: unknown) => e instanceof PaddockError && e.code === 'INVALID_ARGUMENT' && /1h/.test(e.message),
        bad,
      );
    }
  });
});
