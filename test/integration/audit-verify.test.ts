/**
 * `paddock audit verify` and `paddock audit export` on a real server's data directory, with the
 * head signed by `paddock serve` to a file outside the data directory: a tail removed together
 * with the head row still verifies as a chain, and the signed heads catch it.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { runCli, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

describe('paddock audit verify and export', () => {
  let project: TempProject;
  let keys: string;
  let heads: string;

  before(async () => {
    keys = mkdtempSync(join(tmpdir(), 'paddock-keys-'));
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(join(keys, 'audit.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
      mode: 0o600,
    });
    heads = join(keys, 'heads.jsonl');
    project = tempProject(
      `server:\n  auth: none\ncomputer:\n  autoLaunch: false\naudit:\n  signing:\n    keyFile: ${join(keys, 'audit.pem')}\n    file: ${heads}\n    everyMinutes: 1\n`,
    );
    const serve = await startServe(project);
    try {
      for (let i = 0; i < 5; i++) {
        const r = await runCli(project, [
          'tools',
          'call',
          'save_memory',
          JSON.stringify({ content: `note ${i}` }),
        ]);
        assert.equal(r.code, 0, r.stderr);
      }
      await runCli(project, ['tools', 'call', 'no_such_tool', '{}']);
    } finally {
      assert.equal(await serve.stop(), 0);
    }
    await pollUntil(() => existsSync(heads), 'the signed heads file');
  });

  after(() => {
    project?.cleanup();
    rmSync(keys, { recursive: true, force: true });
  });

  it('verifies an untouched log and its signed heads', async () => {
    const r = await runCli(project, ['audit', 'verify', '--signed', heads]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /audit chain: OK — 6 rows verified \(end seq 1–6\); head end seq 6/);
    assert.match(r.stdout, /signed heads match/);
    const last = JSON.parse(readFileSync(heads, 'utf8').trim().split('\n').at(-1)!);
    assert.equal(last.endSeq, 6, 'the server signed its last head when it stopped');
  });

  it('exports the rows with their links as JSON lines and as OCSF events', async () => {
    const jsonl = await runCli(project, ['audit', 'export']);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const rows = jsonl.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      rows.map((r) => r.endSeq),
      [1, 2, 3, 4, 5, 6],
    );
    assert.ok(
      rows.every((r, i) => i === 0 || r.chainPrev === rows[i - 1].chainHash),
      'the links chain',
    );
    const ocsf = await runCli(project, ['audit', 'export', '--format', 'ocsf', '--after-end-seq', '4']);
    const events = ocsf.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(events.length, 2);
    assert.deepEqual(
      [events[0].class_uid, events[0].api.operation, events[0].status_id, events[0].unmapped.chain_hash],
      [6003, 'save_memory', 1, rows[4].chainHash],
    );
    assert.deepEqual(
      [events[1].api.operation, events[1].status_id, events[1].status_code],
      ['no_such_tool', 2, 'NOT_FOUND'],
    );
  });

  it('a removed tail passes the chain (its head is the last row) but not the signed heads', async () => {
    const db = new BetterSqlite3(join(project.dataDir, 'paddock.db'));
    try {
      db.prepare('DELETE FROM tool_invocations WHERE end_seq = 6').run();
    } finally {
      db.close();
    }
    const plain = await runCli(project, ['audit', 'verify']);
    assert.equal(plain.code, 0, 'the chain alone cannot see a consistent cut');
    const signed = await runCli(project, ['audit', 'verify', '--signed', heads, '--json']);
    assert.equal(signed.code, 1);
    const report = JSON.parse(signed.stdout);
    assert.equal(report.problem.kind, 'truncated');
    assert.match(
      report.problem.message,
      /Rows after end seq 5 were removed: a head signed at .* names end seq 6/,
    );
  });

  it('refuses to serve with a signing key inside the data directory', async () => {
    const inside = tempProject();
    try {
      const key = join(inside.dataDir, 'audit.pem');
      const { privateKey } = generateKeyPairSync('ed25519');
      const { mkdirSync } = await import('node:fs');
      mkdirSync(inside.dataDir, { recursive: true });
      writeFileSync(key, privateKey.export({ type: 'pkcs8', format: 'pem' }));
      writeFileSync(
        join(inside.dir, 'paddock.yaml'),
        `computer:\n  autoLaunch: false\naudit:\n  signing:\n    keyFile: ${key}\n    file: ${join(keys, 'other.jsonl')}\n`,
      );
      await assert.rejects(startServe(inside), /audit\.signing\.keyFile: .*inside the data directory/);
    } finally {
      inside.cleanup();
    }
  });
});
