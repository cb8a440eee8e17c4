/** `paddock audit verify` and `paddock audit export`: the hash chain of the audit log. */
import { toJsonLine, toOcsf } from '../audit/export.js';
import { checkSignedHeads, loadHeadKey, readSignedHeads } from '../audit/signing.js';
import { parseSince } from '../audit/since.js';
import { type ChainReport, verifyChain } from '../audit/verify.js';
import { CONFIG_OPTION, out, parseCommandArgs, UsageError } from './args.js';
import { loadFor, withStores } from './context.js';

const VERIFY_HELP = `Usage: paddock audit verify [FROM..TO] [--signed FILE] [--key PEM] [--json]

Recomputes the hash chain of the audit log (every row that ended, in end seq order) and names the
first row that was changed, removed, inserted or moved. FROM..TO limits the walk to end seqs
(either side may be left out: 100.., ..250). --signed checks the signed heads of FILE (default:
audit.signing.file) with the key (default: audit.signing.keyFile; a public key is enough), which
also catches a removed tail. Exit code 0: the chain holds; 1: a problem was found.`;

const EXPORT_HELP = `Usage: paddock audit export [--since 1h|ISO] [--after-end-seq N] [--format jsonl|ocsf]

Writes the rows that ended, in end seq order, one JSON object a line, with their chain links:
Paddock's own row shape (jsonl, the default) or OCSF API Activity events (ocsf) for a SIEM.
--after-end-seq continues an earlier export (pass the last endSeq it wrote).`;

/** `paddock audit verify …`. */
export async function auditVerify(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('audit verify', args, {
    ...CONFIG_OPTION,
    signed: { type: 'string' },
    key: { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    out(VERIFY_HELP);
    return 0;
  }
  const range = parseRange(positionals[0]);
  const loaded = await loadFor(values);
  const signing = loaded.config.audit.signing;
  const signedFile = typeof values.signed === 'string' ? values.signed : undefined;
  const keyFile = typeof values.key === 'string' ? values.key : signing?.keyFile;
  return withStores(values, async ({ audit }) => {
    let report: ChainReport = await verifyChain(audit, range);
    let signedHeads = 0;
    if (report.ok && signedFile) {
      if (!keyFile) throw new UsageError('--signed needs the key: pass --key or set audit.signing.keyFile.');
      const records = readSignedHeads(signedFile);
      signedHeads = records.length;
      const problem = await checkSignedHeads(audit, records, loadHeadKey(keyFile));
      if (problem) report = { ...report, ok: false, problem };
    }
    if (values.json) out(JSON.stringify({ ...report, signedHeads }, null, 2));
    else out(describe(report, signedHeads));
    return report.ok ? 0 : 1;
  });
}

function describe(r: ChainReport, signedHeads: number): string {
  if (r.problem)
    return `audit chain: BROKEN at end seq ${r.problem.endSeq} (${r.problem.kind}). ${r.problem.message}`;
  const span = r.checked > 0 ? ` (end seq ${r.fromEndSeq}–${r.toEndSeq})` : '';
  const older =
    r.unchainedBefore > 0 ? ` ${r.unchainedBefore} rows older than the chain are not linked.` : '';
  const signed = signedHeads > 0 ? ` ${signedHeads} signed heads match.` : '';
  return `audit chain: OK — ${r.checked} rows verified${span}; head end seq ${r.head.endSeq}, ${r.head.hash}.${older}${signed}`;
}

function parseRange(text: string | undefined): { fromEndSeq?: number; toEndSeq?: number } {
  if (text === undefined) return {};
  const m = /^(\d*)\.\.(\d*)$/.exec(text) ?? /^(\d+)()$/.exec(text);
  if (!m || (m[1] === '' && m[2] === ''))
    throw new UsageError(
      `"${text}" is not a range of end seqs; write FROM..TO, FROM.. or ..TO (e.g. 100..250).`,
    );
  return {
    ...(m[1] ? { fromEndSeq: Number(m[1]) } : {}),
    ...(m[2] ? { toEndSeq: Number(m[2]) } : text.includes('..') ? {} : { toEndSeq: Number(m[1]) }),
  };
}

/** `paddock audit export …`. */
export async function auditExport(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(
    'audit export',
    args,
    {
      ...CONFIG_OPTION,
      since: { type: 'string' },
      'after-end-seq': { type: 'string' },
      format: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    false,
  );
  if (values.help) {
    out(EXPORT_HELP);
    return 0;
  }
  const format = values.format ?? 'jsonl';
  if (format !== 'jsonl' && format !== 'ocsf') throw new UsageError('--format is jsonl or ocsf.');
  const since = typeof values.since === 'string' ? parseSince(values.since) : undefined;
  const afterArg = values['after-end-seq'];
  const after = afterArg === undefined ? 0 : Number(afterArg);
  if (!Number.isInteger(after) || after < 0) throw new UsageError('--after-end-seq takes a whole number.');
  return withStores(values, async ({ audit }) => {
    let cursor = after;
    for (;;) {
      const page = await audit.chained(cursor, 1000);
      for (const row of page) {
        if (since !== undefined && row.startedAt < since) continue;
        process.stdout.write(`${format === 'ocsf' ? JSON.stringify(toOcsf(row)) : toJsonLine(row)}\n`);
      }
      if (page.length < 1000) return 0;
      cursor = page.at(-1)!.endSeq!;
    }
  });
}
