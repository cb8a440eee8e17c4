import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { validateConfigText } from '../../../src/config/load.js';
import type { PaddockConfig } from '../../../src/config/paddock-config.js';
import { ConfigReloader } from '../../../src/main/config-reload.js';
import { createLogger } from '../../../src/shared/logger.js';
import { pollUntil } from '../../helpers/poll.js';

function setup(text: string) {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-reload-'));
  const file = join(dir, 'paddock.yaml');
  writeFileSync(file, text);
  const lines: string[] = [];
  const applied: PaddockConfig[] = [];
  const reloader = new ConfigReloader({
    file,
    current: validateConfigText(file, text),
    logger: createLogger({ json: true, write: (line) => lines.push(line) }),
    apply: async (next) => {
      applied.push(next);
    },
    debounceMs: 20,
  });
  return {
    dir,
    file,
    lines,
    applied,
    reloader,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

const events = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('paddock.yaml reloads', () => {
  it('puts a valid policy in force and names other changed sections as needing a restart', async () => {
    const t = setup('policy:\n  http:\n    allow: [a.example.com]\n');
    try {
      writeFileSync(t.file, 'policy:\n  http:\n    allow: [b.example.com]\nserver:\n  port: 7777\n');
      assert.equal(await t.reloader.reload('request'), 'reloaded');
      assert.deepEqual(t.applied[0]?.policy.http.allow, ['b.example.com']);
      const restart = events(t.lines).find((e) => e.event === 'config.restart_needed');
      assert.deepEqual(restart?.sections, ['server']);
      assert.equal(await t.reloader.reload('request'), 'unchanged');
      assert.equal(t.applied.length, 1);
    } finally {
      t.cleanup();
    }
  });

  it('keeps the running policy on an invalid edit and logs each problem with its path', async () => {
    const t = setup('policy:\n  http:\n    allow: [a.example.com]\n');
    try {
      writeFileSync(t.file, 'policy:\n  http:\n    allow: ["*.com"]\n  tcp:\n    allow: [db.internal]\n');
      assert.equal(await t.reloader.reload('request'), 'invalid');
      writeFileSync(t.file, 'policy: [unclosed\n');
      assert.equal(await t.reloader.reload('request'), 'invalid');
      assert.equal(t.applied.length, 0);
      const failed = events(t.lines).filter((e) => e.event === 'config.reload_failed');
      assert.equal(failed.length, 2);
      const problems = (failed[0]!.problems as string[]).join('\n');
      assert.match(problems, /policy\.http\.allow\.0: .*public suffix/);
      assert.match(problems, /policy\.tcp\.allow\.0: .*names its port/);
      assert.match((failed[1]!.problems as string[]).join('\n'), /line \d+, column \d+/);
    } finally {
      t.cleanup();
    }
  });

  it('reloads when the file changes, including an editor that replaces it, and on SIGHUP', async () => {
    const t = setup('policy:\n  http:\n    allow: [a.example.com]\n');
    t.reloader.start();
    try {
      writeFileSync(`${t.file}.tmp`, 'policy:\n  http:\n    allow: [c.example.com]\n');
      const { renameSync } = await import('node:fs');
      renameSync(`${t.file}.tmp`, t.file);
      await pollUntil(() => t.applied.length === 1, 'the watched change', 5000);
      assert.deepEqual(t.applied[0]?.policy.http.allow, ['c.example.com']);
      writeFileSync(t.file, 'policy:\n  http:\n    allow: [d.example.com]\n');
      process.kill(process.pid, 'SIGHUP');
      await pollUntil(
        () => t.applied.some((c) => c.policy.http.allow[0] === 'd.example.com'),
        'SIGHUP',
        5000,
      );
    } finally {
      t.reloader.close();
      t.cleanup();
    }
  });
});
