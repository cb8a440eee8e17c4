/**
 * The escape a new user found, replayed through the whole server (gateway, audit, tool channel)
 * with the default policy (`/workspace` and `/tmp`): a job plants links to `/var/tmp/out`, which
 * is `/tmp/out` seen through the computer's `/var/tmp` link. Every file tool refuses every path
 * through them, the audit row says which link led where, and nothing outside changes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { createPaddock, type Paddock } from '../../src/main.js';
import { silentLogger } from '../../src/shared/logger.js';
import { OWNER } from '../../src/shared/principal.js';
import { pollUntil } from '../helpers/poll.js';

const caller = { caller: 'mcp:escape', principal: OWNER, via: 'direct' as const, attended: true };

describe('file tools and links planted by a job (default policy, whole server)', () => {
  let dir: string;
  let paddock: Paddock;

  const call = (tool: string, input: Record<string, unknown>) => paddock.gateway.call(tool, input, caller);
  const sh = async (script: string) => {
    const r = await call('run_command', { script, waitMs: 10_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error.toJSON()));
    const { jobId } = r.result.structured as { jobId: string };
    type Read = { terminationObserved: boolean; exitCode: number; stdout: string; stderr: string };
    // read from the start once the end is observed: the whole stdout and stderr
    const done = await pollUntil(
      async () => {
        const read = await call('read_job', { jobId, byteLimit: 65536 });
        const s = read.ok ? (read.result.structured as Read) : null;
        return s?.terminationObserved ? s : null;
      },
      `job ${jobId}`,
      30_000,
    );
    assert.equal(done?.exitCode, 0, done?.stderr);
    return done as Read;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-escape-'));
    writeFileSync(join(dir, 'paddock.yaml'), 'computer:\n  autoLaunch: true\n');
    paddock = await createPaddock(loadConfig({ cwd: dir, env: { PADDOCK_DATA: join(dir, 'data') } }), {
      logger: silentLogger(),
    });
    await sh(
      [
        'mkdir -p /var/tmp/out && echo outside-secret > /var/tmp/out/s.txt',
        'ln -s /var/tmp/out/s.txt /workspace/pw',
        'ln -s /var/tmp/out /workspace/od',
        'echo inside > /workspace/b.txt && ln -s b.txt /workspace/ok-link && mkdir /workspace/sub && ln -s sub/ /workspace/dir-link',
      ].join(' && '),
    );
  });

  after(async () => {
    await paddock?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses read_file, list_files, list_dir and write_file through the planted links, naming the link in the audit row', async () => {
    const attempts: [string, Record<string, unknown>][] = [
      ['read_file', { path: '/workspace/pw' }],
      ['read_file', { path: '/workspace/od/s.txt' }],
      ['list_files', { path: '/workspace/od' }],
      ['list_dir', { path: '/workspace/od' }],
      ['write_file', { path: '/workspace/od/new', content: 'x', overwrite: true }],
      ['write_file', { path: '/workspace/od/new', content: 'x', overwrite: false }],
      ['write_file', { path: '/workspace/pw', content: 'x', overwrite: true }],
    ];
    for (const [tool, input] of attempts) {
      const r = await call(tool, input);
      assert.ok(!r.ok, `${tool} ${JSON.stringify(input)} was allowed`);
      assert.equal(r.error.code, 'POLICY_DENIED', `${tool} ${JSON.stringify(input)}: ${r.error.message}`);
      assert.match(r.error.message, /\/var\/tmp/, 'the message names the link that led outside');
    }
    const rows = await paddock.audit.query({ limit: 50 });
    const denied = rows.filter((row) => row.errorCode === 'POLICY_DENIED');
    assert.equal(denied.length, attempts.length, 'one audit row per refusal');
    for (const row of denied) {
      assert.match(
        row.errorMessage ?? '',
        /\/workspace\/(pw|od) -> \/var\/tmp/,
        'the row says which link led where',
      );
      assert.equal(row.policyRule, 'default-deny');
    }
    const left = await sh('ls /tmp/out && cat /tmp/out/s.txt');
    assert.equal(left.stdout, 's.txt\noutside-secret\n', 'nothing outside the roots changed');
  });

  it('gives a script in the computer no way around it through the tool channel, which offers no file tool', async () => {
    const job = await sh(
      'paddock-tool call read_file \'{"path":"/workspace/pw"}\' || true; paddock-tool call write_file \'{"path":"/workspace/od/new2","content":"x","overwrite":true}\' || true; ls /tmp/out',
    );
    assert.match(
      job.stderr,
      /NOT_FOUND: Unknown tool "read_file"[\s\S]*NOT_FOUND: Unknown tool "write_file"/,
    );
    assert.doesNotMatch(job.stdout + job.stderr, /outside-secret/);
    assert.equal(job.stdout, 's.txt\n', 'nothing was written outside');
  });

  it('keeps links that stay inside the roots working', async () => {
    const r = await call('read_file', { path: '/workspace/ok-link' });
    assert.ok(r.ok && (r.result.structured as { content: string }).content === 'inside\n');
    const w = await call('write_file', { path: '/workspace/dir-link/x.txt', content: 'y', overwrite: false });
    assert.ok(w.ok, JSON.stringify(!w.ok && w.error.toJSON()));
    const l = await call('list_files', { path: '/workspace/dir-link' });
    assert.ok(l.ok && JSON.stringify(l.result.structured).includes('x.txt'));
  });
});
