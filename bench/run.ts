/**
 * `npm run bench [suite…] [-- --json[=FILE]]`: runs the suites, prints each Paddock figure with the
 * peers measured in the same run and the ratio to each, and with `--json` writes the same rows to
 * FILE (default bench-results.json) for comparison across commits.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { benchGateway } from './gateway.js';

/** Something else doing the same work, measured in the same run and unit. */
export interface Peer {
  name: string;
  value: number;
}

/** One measured figure, printed beside its target and its peers. */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  target: string;
  peers?: Peer[];
}

type Suite = { name: string; run: () => Promise<Figure[]> };

async function loadSuites(): Promise<Suite[]> {
  const suites: Suite[] = [{ name: 'gateway', run: benchGateway }];
  // Optional suites: each module ships its own bench file; a missing one is reported, not fatal.
  const optional: [string, string, string][] = [
    ['cli', './cli.js', 'benchCli'],
    ['policy', './policy.js', 'benchPolicy'],
    ['computer', './computer.js', 'benchComputer'],
    ['integrations', './integrations.js', 'benchIntegrations'],
    ['channel', './channel.js', 'benchChannel'],
    ['terminals', './terminals.js', 'benchTerminals'],
    ['bridge', './bridge.js', 'benchBridge'],
    ['http-load', './http-load.js', 'benchHttpLoad'],
    ['eras', './eras.js', 'benchEras'],
    ['egress', './egress.js', 'benchEgress'],
    ['egress-names', './egress-names.js', 'benchEgressNames'],
    ['warm', './warm-pool.js', 'benchWarmPool'],
    ['images', './images.js', 'benchImages'],
    ['stores', './stores.js', 'benchStores'],
    ['browser', './browser.js', 'benchBrowser'],
    ['checkpoints', './checkpoints.js', 'benchCheckpoints'],
    ['checkpoint-tools', './checkpoint-tools.js', 'benchCheckpointTools'],
  ];
  for (const [name, path, fn] of optional) {
    try {
      const mod = (await import(path)) as Record<string, () => Promise<Figure[]>>;
      const run = mod[fn];
      if (run) suites.push({ name, run });
    } catch (e) {
      process.stderr.write(`bench: suite ${name} unavailable (${(e as Error).message})\n`);
    }
  }
  return suites;
}

function format(value: number): string {
  if (value >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(value >= 10 ? 1 : 3);
}

/** value ÷ peer: below 1 is faster for times, slower for rates (the unit says which). */
function ratio(value: number, peer: number): number | null {
  return peer > 0 ? value / peer : null;
}

function commit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: 'pipe' }).trim();
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const jsonArg = args.find((a) => a === '--json' || a.startsWith('--json='));
  const jsonFile = jsonArg ? jsonArg.slice('--json='.length) || 'bench-results.json' : null;
  const only = args.filter((a) => !a.startsWith('--'));
  const rows: (Figure & { suite: string })[] = [];
  for (const suite of await loadSuites()) {
    if (only.length > 0 && !only.includes(suite.name)) continue;
    process.stderr.write(`bench: running ${suite.name}...\n`);
    try {
      for (const f of await suite.run()) rows.push({ ...f, suite: suite.name });
    } catch (e) {
      process.stderr.write(`bench: suite ${suite.name} failed: ${(e as Error).stack}\n`);
    }
  }
  const w = Math.max(...rows.map((r) => r.name.length), 10);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(`${'suite'.padEnd(13)} ${'figure'.padEnd(w)} ${'value'.padStart(14)} unit        target`);
  for (const r of rows) {
    out(
      `${r.suite.padEnd(13)} ${r.name.padEnd(w)} ${format(r.value).padStart(14)} ${r.unit.padEnd(11)} ${r.target}`,
    );
    for (const p of r.peers ?? []) {
      const x = ratio(r.value, p.value);
      const label = `  vs ${p.name}`;
      out(
        `${''.padEnd(13)} ${label.padEnd(w)} ${format(p.value).padStart(14)} ${r.unit.padEnd(11)} ${x === null ? '—' : `${x.toFixed(2)}×`}`,
      );
    }
  }
  if (jsonFile) {
    const report = {
      date: new Date().toISOString(),
      commit: commit(),
      node: process.versions.node,
      cpus: cpus().length,
      figures: rows.map((r) => ({
        ...r,
        peers: (r.peers ?? []).map((p) => ({ ...p, ratio: ratio(r.value, p.value) })),
      })),
    };
    writeFileSync(jsonFile, `${JSON.stringify(report, null, 2)}\n`);
    process.stderr.write(`bench: wrote ${rows.length} figures to ${jsonFile}\n`);
  }
}

await main();
