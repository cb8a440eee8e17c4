import { summarizeCall } from '../../audit/call-summary.js';
import type { StoredInvocation } from '../../audit/types.js';

export interface FormatAuditRowOptions {
  /** Print the time in UTC (`…Z`) instead of the local time zone. */
  utc?: boolean;
  /** Add what the call did (summarizeCall of its input: a path, a URL, `host:port` of egress). */
  what?: boolean;
}

type FormattableRow = Pick<
  StoredInvocation,
  'startedAt' | 'durationMs' | 'tool' | 'caller' | 'via' | 'success' | 'errorCode'
> &
  Partial<Pick<StoredInvocation, 'state' | 'approvalId' | 'approver' | 'checkpointId' | 'input'>>;

/**
 * One line for people reading `paddock audit`: time, duration, tool, caller, via, outcome
 * (`running`, `INTERRUPTED`, `ok` or `FAIL` with the error code), in aligned columns, e.g.
 * `2025-01-31 09:00:00.123     12ms  http_get              cli           direct   FAIL POLICY_DENIED`;
 * an approved call names its approval, its approver and the checkpoint taken before it.
 * Control characters in stored values are shown as `?` so a row cannot drive the terminal.
 */
export function formatAuditRow(row: FormattableRow, options: FormatAuditRowOptions = {}): string {
  const outcome =
    row.state === 'running'
      ? 'running'
      : row.state === 'interrupted'
        ? 'INTERRUPTED'
        : row.success
          ? 'ok'
          : `FAIL ${clean(row.errorCode ?? 'UNKNOWN')}`;
  const what = options.what && row.input ? summarizeCall(row.tool, row.input) : '';
  return [
    formatTime(row.startedAt, options.utc ?? false),
    formatDuration(row.durationMs).padStart(8),
    clean(row.tool).padEnd(20),
    clean(row.caller).padEnd(12),
    clean(row.via).padEnd(8),
    row.approvalId
      ? `${outcome}  (approval ${clean(row.approvalId)}${row.approver ? ` by ${clean(row.approver)}` : ''}${row.checkpointId ? `, checkpoint ${clean(row.checkpointId)} before it` : ''})`
      : outcome,
    ...(what ? [clean(what)] : []),
  ].join('  ');
}

/** `2025-01-31 09:00:00.123` (local) or `2025-01-31 09:00:00.123Z` (UTC). */
function formatTime(epochMs: number, utc: boolean): string {
  const d = new Date(epochMs);
  if (Number.isNaN(d.getTime())) return 'invalid-time'.padEnd(utc ? 24 : 23);
  if (utc) return d.toISOString().replace('T', ' ');
  const p = (n: number, width = 2) => String(n).padStart(width, '0');
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`
  );
}

/** `0.4ms`, `12ms`, `1.5s`, `2m05s`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  if (ms < 10) return `${ms.toFixed(1)}ms`;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 59_950) return `${(ms / 1000).toFixed(1)}s`;
  const totalSeconds = Math.round(ms / 1000);
  return `${Math.floor(totalSeconds / 60)}m${String(totalSeconds % 60).padStart(2, '0')}s`;
}

function clean(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}
