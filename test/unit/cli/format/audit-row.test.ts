import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatAuditRow, formatDuration } from '../../../../src/cli/format/audit-row.js';

const base = {
  startedAt: Date.UTC(2025, 0, 31, 9, 0, 0, 123),
  durationMs: 12.4,
  tool: 'read_file',
  caller: 'mcp:s1',
  via: 'direct' as const,
  success: true,
  errorCode: null,
};

describe('formatAuditRow', () => {
  it('shows time, duration, tool, caller, via and outcome on one line', () => {
    const line = formatAuditRow(base, { utc: true });
    assert.equal(line.includes('\n'), false);
    assert.match(line, /^2025-01-31 09:00:00\.123Z\s+12ms\s+read_file\s+mcp:s1\s+direct\s+ok$/);
  });

  it('shows a failure with its error code', () => {
    const line = formatAuditRow({ ...base, success: false, errorCode: 'POLICY_DENIED' }, { utc: true });
    assert.match(line, /\sFAIL POLICY_DENIED$/);
  });

  it('names the approval, its approver and the checkpoint taken before an approved call', () => {
    const line = formatAuditRow(
      { ...base, tool: 'run_command', approvalId: 'apr_1', approver: 'cli', checkpointId: 'ck_1' },
      { utc: true },
    );
    assert.match(line, /\sok {2}\(approval apr_1 by cli, checkpoint ck_1 before it\)$/);
    const forged = formatAuditRow(
      { ...base, approvalId: 'apr_1', checkpointId: 'ck_\u001b[2J' },
      { utc: true },
    );
    assert.equal(forged.includes('\u001b'), false, 'a stored id cannot drive the terminal');
  });

  it('aligns the columns of rows with short values', () => {
    const a = formatAuditRow(base, { utc: true });
    const b = formatAuditRow({ ...base, tool: 'x', caller: 'cli', durationMs: 2500 }, { utc: true });
    assert.equal(a.indexOf('direct'), b.indexOf('direct'));
  });

  it('names the host and port of an egress row, and what other calls did, when asked for', () => {
    const egress = formatAuditRow(
      {
        ...base,
        tool: 'egress',
        via: 'direct',
        input: '{"kind":"connect","host":"pypi.org","port":443,"method":"CONNECT"}',
      },
      { utc: true, what: true },
    );
    assert.match(egress, /\sok\s+connect pypi\.org:443$/);
    const read = formatAuditRow({ ...base, input: '{"path":"/workspace/a.txt"}' }, { utc: true, what: true });
    assert.match(read, /\sok\s+reads \/workspace\/a\.txt$/);
    const evil = formatAuditRow(
      { ...base, tool: 'egress', input: '{"host":"a\\u001b[2J","port":1}' },
      { what: true },
    );
    assert.equal(/[\u0000-\u001f]/.test(evil), false);
  });

  it('prints control characters from stored values as ?', () => {
    const line = formatAuditRow({ ...base, tool: 'evil\u001b[2Jtool', caller: 'a\nb' }, { utc: true });
    assert.equal(/[\u0000-\u001f]/.test(line), false);
    assert.match(line, /evil\?\[2Jtool/);
  });

  it('prints local time without a zone suffix by default', () => {
    assert.match(formatAuditRow(base), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\s/);
  });
});

describe('formatDuration', () => {
  it('uses tenths under 10 ms, whole ms under a second, then seconds and minutes', () => {
    assert.equal(formatDuration(0.42), '0.4ms');
    assert.equal(formatDuration(12.4), '12ms');
    assert.equal(formatDuration(1500), '1.5s');
    assert.equal(formatDuration(125_000), '2m05s');
    assert.equal(formatDuration(59_990), '1m00s');
    assert.equal(formatDuration(Number.NaN), '?');
  });
});
