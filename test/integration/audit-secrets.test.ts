import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { createPaddock } from '../../src/main.js';
import { silentLogger } from '../../src/shared/logger.js';
import { OWNER } from '../../src/shared/principal.js';
import { toDockAuditRow } from '../../src/web/dock/views.js';
import { rows } from '../helpers/audit-rows.js';
import { REPO_ROOT } from '../helpers/paddock-process.js';

interface Secret {
  kind: string;
  value: string;
}

const CORPUS = JSON.parse(
  readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'secrets', 'corpus.json'), 'utf8'),
) as { secrets: Secret[] };

/** What a search of the raw file must never find: the longest line of each secret. */
function needle(secret: Secret): string {
  return secret.value.split('\n').reduce((a, b) => (b.length > a.length ? b : a));
}

/** Inputs that carry a secret under a name or in a shape that says so. */
function shapes(s: string): { tool: string; input: Record<string, unknown> }[] {
  return [
    {
      tool: 'run_command',
      input: {
        script: [
          `curl -H "Authorization: Bearer ${s}" https://api.example.com/`,
          `curl -H 'Authentication: ${s}' -H "X-Auth-Key: ${s}" -H "Ocp-Apim-Subscription-Key: ${s}" x`,
          `curl "https://api.example.com/v1/items?access_token=${s}&page=2"`,
          `git clone https://deploy:${s}@git.example.com/org/repo.git`,
          `export PASSWORD=${s}`,
          `mysql --password=${s} -h db`,
          `curl -d '{"password":"${s}"}' https://api.example.com/login`,
        ].join('\n'),
        env: {
          OPENAI_KEY: s,
          GH_PAT: s,
          DATABASE_URL: `postgres://app:${s}@db.internal:5432/app`,
          SERVICE_AUTH: s,
        },
      },
    },
    {
      tool: 'http_post',
      input: {
        url: `https://hooks.example.com/in?token=${s}`,
        headers: { Authentication: s, 'X-Auth-Key': s, 'Ocp-Apim-Subscription-Key': s },
        body: JSON.stringify({ user: 'ada', password: s, nested: { client_secret: s } }),
      },
    },
    { tool: 'http_get', input: { url: `https://${s}@github.example.com/org/repo` } },
  ];
}

/** Bare in text, with nothing around it to say it is secret: only its own shape betrays it. */
function bare(s: string): { tool: string; input: Record<string, unknown> }[] {
  return [
    { tool: 'run_command', input: { script: `echo ${s} | some-cli login`, env: { CONFIG: s } } },
    { tool: 'http_post', input: { url: 'https://api.example.com/', body: `key material: ${s}` } },
  ];
}

describe('secrets never reach the database', () => {
  it('stores none of the corpus secrets, by name or by shape, in rows, whole inputs, errors or dock rows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-secrets-'));
    try {
      writeFileSync(join(dir, 'paddock.yaml'), 'computer:\n  autoLaunch: false\n');
      const dataDir = join(dir, 'data');
      const paddock = await createPaddock(loadConfig({ cwd: dir, env: { PADDOCK_DATA: dataDir } }), {
        logger: silentLogger(),
      });
      const caller = { principal: OWNER, caller: 'mcp:secrets', via: 'direct' as const, attended: true };
      let calls = 0;
      const dock: string[] = [];
      const sub = paddock.audit.subscribe((row) => dock.push(JSON.stringify(toDockAuditRow(row))));
      for (const secret of CORPUS.secrets) {
        const all = [...shapes(secret.value), ...(secret.kind === 'bare-password' ? [] : bare(secret.value))];
        for (const { tool, input } of all) {
          await paddock.gateway.call(tool, input, caller);
          calls++;
        }
        // an unknown tool's row keeps its input and error message too
        await paddock.gateway.call('no_such_tool', { note: `Authorization: Bearer ${secret.value}` }, caller);
        calls++;
      }
      sub.dispose();
      assert.equal((await paddock.audit.query({ limit: 10_000 })).length, calls);
      await paddock.close();

      const files = ['paddock.db', 'paddock.db-wal']
        .map((f) => join(dataDir, f))
        .filter((f) => existsSync(f));
      const raw = files.map((f) => readFileSync(f).toString('latin1')).join('\n');
      assert.ok(raw.includes('api.example.com'), 'the rows are in the searched files');
      const leaked = CORPUS.secrets.filter(
        (s) => raw.includes(needle(s)) || dock.some((d) => d.includes(needle(s))),
      );
      assert.deepEqual(
        leaked.map((s) => s.kind),
        [],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('credential shapes as stored in the audit table', () => {
  it('stores each shape redacted: authorization in any case, curl -u, --password VALUE, -p of mysql and sshpass, URL userinfo', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-shapes-'));
    const S = 'Zq7hunter2';
    const R = '[REDACTED]';
    const cases: { tool: string; input: Record<string, unknown>; stored: Record<string, unknown> }[] = [
      ...[
        [
          `curl -H "authorization: bearer ${S}" https://api.example.com/`,
          `curl -H "authorization: bearer ${R}" https://api.example.com/`,
        ],
        [`curl -u ada:${S} https://api.example.com/`, `curl -u ada:${R} https://api.example.com/`],
        [`wget --password ${S} https://h.example/f`, `wget --password ${R} https://h.example/f`],
        [`mysql -h db -u root -p${S} app`, `mysql -h db -u root -p${R} app`],
        [`sshpass -p ${S} ssh ada@h.example`, `sshpass -p ${R} ssh ada@h.example`],
        [`psql "postgresql://ada:${S}@db:5432/app"`, `psql "postgresql://${R}@db:5432/app"`],
        [`git clone https://ada:${S}@git.example.com/r.git`, `git clone https://${R}@git.example.com/r.git`],
      ].map(([script, stored]) => ({ tool: 'run_command', input: { script }, stored: { script: stored } })),
      {
        tool: 'shell',
        input: { argv: ['curl', '-u', `ada:${S}`, '--proxy-user', `p:${S}`, 'https://x.example'] },
        stored: { argv: ['curl', '-u', `ada:${R}`, '--proxy-user', `p:${R}`, 'https://x.example'] },
      },
      {
        tool: 'shell',
        input: { argv: ['sshpass', '-p', S, 'ssh', 'h'] },
        stored: { argv: ['sshpass', '-p', R, 'ssh', 'h'] },
      },
      {
        tool: 'shell',
        input: { argv: ['mysql', `-p${S}`, '--password', S] },
        stored: { argv: ['mysql', `-p${R}`, '--password', R] },
      },
      {
        tool: 'http_get',
        input: { url: `https://ada:${S}@h.example/` },
        stored: { url: `https://${R}@h.example/` },
      },
    ];
    try {
      writeFileSync(join(dir, 'paddock.yaml'), 'computer:\n  autoLaunch: false\n');
      const dataDir = join(dir, 'data');
      const paddock = await createPaddock(loadConfig({ cwd: dir, env: { PADDOCK_DATA: dataDir } }), {
        logger: silentLogger(),
      });
      const caller = { caller: 'mcp:shapes', principal: OWNER, via: 'direct' as const, attended: true };
      for (const { tool, input } of cases) await paddock.gateway.call(tool, input, caller);
      await paddock.close();
      const stored = rows(dataDir);
      assert.equal(stored.length, cases.length);
      stored.forEach((row, i) => {
        assert.equal(row.tool, cases[i]!.tool);
        assert.deepEqual(JSON.parse(row.input ?? 'null'), cases[i]!.stored);
      });
      const raw = ['paddock.db', 'paddock.db-wal']
        .map((f) => join(dataDir, f))
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f).toString('latin1'))
        .join('\n');
      assert.ok(raw.includes('x.example') && !raw.includes(S), 'the secret is nowhere in the database files');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
