import { benchGateway } from './gateway.js';

/** One measured figure, printed beside its target. */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  target: string;
}

type Suite = { name: string; run: () => Promise<Figure[]> };

async function loadSuites(): Promise<Suite[]> {
  const suites: Suite[] = [{ name: 'gateway', run: benchGateway }];
  // Optional suites: each module ships its own bench file; a missing one is reported, not fatal.
  const optional: [string, string, string][] = [
    ['policy', './policy.js', 'benchPolicy'],
    ['computer', './computer.js', 'benchComputer'],
    ['integrations', './integrations.js', 'benchIntegrations'],
    ['channel', './channel.js', 'benchChannel'],
    ['terminals', './terminals.js', 'benchTerminals'],
    ['bridge', './bridge.js', 'benchBridge'],
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

async function main(): Promise<void> {
  const only = process.argv.slice(2);
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
  process.stdout.write(
    `${'suite'.padEnd(13)} ${'figure'.padEnd(w)} ${'value'.padStart(14)} unit        target\n`,
  );
  for (const r of rows) {
    process.stdout.write(
      `${r.suite.padEnd(13)} ${r.name.padEnd(w)} ${format(r.value).padStart(14)} ${r.unit.padEnd(11)} ${r.target}\n`,
    );
  }
}

await main();
