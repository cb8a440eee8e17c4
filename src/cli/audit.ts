import { formatAuditRow } from '../audit/format.js';
import { parseSince } from '../audit/since.js';
import type { AuditQuery, StoredInvocation } from '../audit/types.js';
import { sleep } from '../shared/abort.js';
import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { withAuditStore } from './context.js';

const HELP = `Usage: paddock audit [--tool T] [--since 1h] [--failed] [--caller C] [--limit N] [--json [--full]] [--follow]

Prints tool invocations, oldest first. --since takes 45s, 30m, 1h, 2d or an ISO time.
--follow keeps printing new rows as they are committed (Ctrl-C to stop).
--full (with --json) prints each row's whole input where the row keeps only a preview.`;

export async function auditCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(
    'audit',
    args,
    {
      ...CONFIG_OPTION,
      tool: { type: 'string' },
      since: { type: 'string' },
      failed: { type: 'boolean' },
      caller: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      full: { type: 'boolean' },
      follow: { type: 'boolean', short: 'f' },
      help: { type: 'boolean', short: 'h' },
    },
    false,
  );
  if (values.help) {
    out(HELP);
    return 0;
  }
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
    throw new UsageError('--limit must be an integer from 1 to 10000.');
  const query: AuditQuery = {
    ...(typeof values.tool === 'string' ? { tool: values.tool } : {}),
    ...(typeof values.caller === 'string' ? { caller: values.caller } : {}),
    ...(typeof values.since === 'string' ? { since: parseSince(values.since) } : {}),
    ...(values.failed ? { failed: true } : {}),
  };
  return withAuditStore(values, async (audit) => {
    const whole = (row: StoredInvocation): StoredInvocation =>
      values.full && row.inputSha256 ? { ...row, input: audit.fullInput(row.inputSha256) ?? row.input } : row;
    const print = (row: StoredInvocation) =>
      out(values.json ? JSON.stringify(whole(row)) : formatAuditRow(row));
    const rows = audit.query({ ...query, limit }).reverse();
    for (const row of rows) print(row);
    if (!values.follow) return 0;
    let afterSeq = rows.at(-1)?.seq ?? audit.query({ limit: 1 })[0]?.seq ?? 0;
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    process.once('SIGTERM', () => stop.abort());
    while (!stop.signal.aborted) {
      // rows may come from another process (a running server): poll the table
      const fresh = audit.query({ ...query, afterSeq, ascending: true, limit: 1000 });
      for (const row of fresh) print(row);
      afterSeq = fresh.at(-1)?.seq ?? afterSeq;
      await sleep(250);
    }
    return 0;
  });
}
