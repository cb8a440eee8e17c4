import { pathToFileURL } from 'node:url';
import { policySchema } from '../src/config/schema.js';
import { createWhitelistSandbox, type PolicyAction } from '../src/policy/index.js';

/** One measured figure, printed beside its target (the same shape as bench/run.ts uses). */
export interface PolicyFigure {
  name: string;
  value: number;
  unit: string;
  target: string;
}

/** A policy like a real one: a few roots, executables with argument rules, a dozen domains. */
function benchSandbox() {
  return createWhitelistSandbox(
    policySchema.parse({
      files: {
        read: ['/workspace', '/tmp', '/usr/share/doc'],
        write: ['/workspace', '/tmp'],
        deny: ['/workspace/.git', '/workspace/.env'],
      },
      exec: {
        allow: [
          { name: 'git', denyArgs: ['-c', '--upload-pack', '--receive-pack', '--exec*', '--config-env*'] },
          { name: 'python3', denyArgs: ['-c'] },
          { name: 'ls' },
          { name: 'rg' },
        ],
        deny: ['curl', 'wget'],
      },
      http: {
        allow: [
          'api.github.com',
          '*.githubusercontent.com',
          'registry.example.org',
          '*.example.com',
          'api.openai.com',
          'api.anthropic.com',
          'hooks.slack.com',
          '*.atlassian.net',
          'localhost:8080',
          '127.0.0.1:9000',
          'docs.python.org',
          '*.readthedocs.io',
        ],
        deny: ['evil.example.com'],
      },
    }),
  );
}

/** Runs `actions` round-robin for `rounds` timed rounds; the median rate in checks per second. */
function checksPerSecond(
  check: (action: PolicyAction) => boolean,
  actions: PolicyAction[],
  perRound: number,
): number {
  const rates: number[] = [];
  let allowed = 0;
  for (let round = 0; round < 7; round++) {
    const start = performance.now();
    for (let i = 0; i < perRound; i++) if (check(actions[i % actions.length]!)) allowed++;
    const elapsedMs = performance.now() - start;
    if (round > 0) rates.push(perRound / (elapsedMs / 1000));
  }
  // Using the results keeps the optimiser from dropping the checks.
  if (allowed === 0) throw new Error('bench: no action was allowed; the bench policy is wrong');
  rates.sort((a, b) => a - b);
  return rates[Math.floor(rates.length / 2)]!;
}

const PATHS: PolicyAction[] = [
  '/workspace/src/index.ts',
  '/workspace/packages/app/src/components/button/index.tsx',
  '/workspace-evil/x',
  '/workspace/.git/config',
  '/etc/passwd',
  '/tmp/build/out.log',
  '/workspace/../etc/shadow',
  '/workspace//x',
  '/usr/share/doc/git/README.md',
  '/workspace/',
].map((path) => ({ type: 'file.read', path }));

const URLS: PolicyAction[] = [
  'https://api.github.com/repos/o/r/pulls?state=open',
  'https://raw.githubusercontent.com/o/r/main/README.md',
  'https://evil.example.com/',
  'https://EXAMPLE.com./x',
  'http://2130706433/',
  'http://[::ffff:127.0.0.1]/',
  'https://user@api.github.com/',
  'https://team.atlassian.net/rest/api/3/issue/ENG-1',
  'http://localhost:8080/health',
  'https://unknown.net/',
].map((url) => ({ type: 'http', method: 'GET', url }));

const COMMANDS: PolicyAction[] = [
  ['git', 'status', '--short'],
  ['git', 'clone', '--upload-pack=evil', 'repo'],
  ['/usr/bin/git', 'log', '-n', '5', '--oneline'],
  ['python3', '-c', 'print(1)'],
  ['./run.sh'],
  ['curl', 'https://example.com'],
  ['rg', '-n', 'TODO', 'src'],
].map((argv) => ({ type: 'exec', argv }));

/** Lexical policy throughput: path, domain and exec checks per second (no I/O). */
export async function benchPolicy(): Promise<PolicyFigure[]> {
  const sandbox = benchSandbox();
  const check = (action: PolicyAction) => sandbox.check(action).allow;
  return [
    {
      name: 'lexical path checks',
      value: checksPerSecond(check, PATHS, 500_000),
      unit: 'checks/s',
      target: '≥ 500,000/s',
    },
    {
      name: 'domain checks (URL parse + rules)',
      value: checksPerSecond(check, URLS, 100_000),
      unit: 'checks/s',
      target: '≥ 100,000/s (own target)',
    },
    {
      name: 'exec checks (argv + denyArgs)',
      value: checksPerSecond(check, COMMANDS, 300_000),
      unit: 'checks/s',
      target: '≥ 100,000/s (own target)',
    },
  ];
}

function printTable(figures: PolicyFigure[]): void {
  const width = Math.max(...figures.map((f) => f.name.length));
  process.stdout.write(`${'figure'.padEnd(width)} ${'value'.padStart(12)} unit       target\n`);
  for (const f of figures) {
    const value = Math.round(f.value).toLocaleString('en-US');
    process.stdout.write(`${f.name.padEnd(width)} ${value.padStart(12)} ${f.unit.padEnd(10)} ${f.target}\n`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printTable(await benchPolicy());
}
