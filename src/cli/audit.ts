import { followAudit } from '../audit/follow.js';
import { parseSince } from '../audit/since.js';
import type { AuditQuery, StoredInvocation } from '../audit/types.js';
import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { withStores } from './context.js';
import { formatAuditRow } from './format/audit-row.js';

const HELP = `Usage: paddock audit [--tool T] [--since 1h] [--failed] [--caller C] [--principal P] [--limit N] [--json [--full]] [--follow]

Prints tool invocations, oldest first. --principal takes owner, client:<id> or agent:<name>. --since takes 45s, 30m, 1h, 2d or an ISO time.
--follow keeps printing new rows as they are committed (Ctrl-C to stop).
--full (with --json) prints each row's whole input where the row keeps only a preview.

  paddock audit verify [FROM..TO] [--signed FILE]   check the hash chain of the rows
  paddock audit export [--since …] [--format jsonl|ocsf]   rows with their chain, for a SIEM`;

export async function auditCommand(args: string[]): Promise<number> {
  if (args[0] === 'verify' || args[0] === 'export') {
    const { auditExport, auditVerify } = await import('./audit-chain.js');
    return args[0] === 'verify' ? auditVerify(args.slice(1)) : auditExport(args.slice(1));
  }
  const { values } = parseCommandArgs(
    'audit',
    args,
    {
      ...CONFIG_OPTION,
      tool: { type: 'string' },
      since: { type: 'string' },
      failed: { type: 'boolean' },
      caller: { type: 'string' },
      principal: { type: 'string' },
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
    ...(typeof values.principal === 'string' ? { principal: values.principal } : {}),
    ...(typeof values.since === 'string' ? { since: parseSince(values.since) } : {}),
    ...(values.failed ? { failed: true } : {}),
  };
  return withStores(values, async ({ audit }) => {
    const whole = async (row: StoredInvocation): Promise<StoredInvocation> =>
      values.full && row.inputSha256
        ? { ...row, input: (await audit.fullInput(row.inputSha256)) ?? row.input }
        : row;
    const print = async (row: StoredInvocation) =>
      out(values.json ? JSON.stringify(await whole(row)) : formatAuditRow(row, { what: true }));
    // where following starts: rows that end after this are new, whichever process writes them
    const from = values.follow ? await audit.lastEndSeq() : 0;
    const rows = (await audit.query({ ...query, limit })).reverse();
    for (const row of rows) await print(row);
    if (!values.follow) return 0;
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    process.once('SIGTERM', () => stop.abort());
    const shown = new Set(rows.filter((r) => r.state !== 'running').map((r) => r.id));
    await followAudit(
      audit,
      query,
      from,
      (row) => (shown.delete(row.id) ? undefined : print(row)),
      stop.signal,
    );
    return 0;
  });
}
