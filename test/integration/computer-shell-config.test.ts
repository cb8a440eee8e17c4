import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

const policy = {
  files: { read: ['/workspace'], write: ['/workspace'] },
  exec: { allow: [{ name: 'git', denyArgs: ['-c', '--config-env*', '--exec-path*'] }] },
};

const PLANTED = [
  'mkdir -p /workspace/repo && cd /workspace/repo && git init -q && git commit -q --allow-empty -m one',
  'git config alias.st "!touch /workspace/pwned-local-alias"',
  'git config core.fsmonitor "touch /workspace/pwned-fsmonitor; false"',
  'git config core.pager "touch /workspace/pwned-pager; cat"',
  'git config pager.log "touch /workspace/pwned-pager-log; cat"',
  'git config core.hooksPath /workspace/hooks',
  'mkdir -p /workspace/hooks && printf "#!/bin/sh\\ntouch /workspace/pwned-hook\\n" > /workspace/hooks/pre-commit && chmod +x /workspace/hooks/pre-commit',
  'echo done',
].join('\n');

describe('the shell built-in and configuration the caller can write', { concurrency: false }, () => {
  it('runs git with its configuration pinned: a planted .gitconfig or .git/config runs nothing', async () => {
    await withComputer({ policy }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      await call('write_file', {
        path: '/workspace/.gitconfig',
        content:
          '[alias]\n\tst = "!touch /workspace/pwned-global-alias"\n\tlg = "!touch /workspace/pwned-global-alias2"\n[user]\n\tname = Mallory\n\temail = m@example.com\n[core]\n\tpager = "touch /workspace/pwned-global-pager; cat"\n',
      });
      const setup = await manager.runCommand({ script: PLANTED, waitMs: 10_000, timeoutMs: 20_000 });
      assert.match(setup.stdout, /done/, setup.stderr);
      const attempts = [
        ['git', 'st'],
        ['git', 'lg'],
        ['git', '-C', '/workspace/repo', 'st'],
        ['git', '-C', '/workspace/repo', 'status'],
        ['git', '-C', '/workspace/repo', 'log', '-1'],
        ['git', '-C', '/workspace/repo', 'commit', '-q', '--allow-empty', '-m', 'two'],
      ];
      for (const argv of attempts) await call('shell', { argv });
      const listing = await call('list_dir', { path: '/workspace' });
      const names = (listing.entries as { name: string }[]).map((e) => e.name);
      assert.deepEqual(
        names.filter((n) => n.startsWith('pwned')),
        [],
        'a config file the caller wrote ran a program',
      );
      // the real subcommands still work
      const log = await call('shell', { argv: ['git', '-C', '/workspace/repo', 'log', '--format=%s'] });
      assert.equal(log.exitCode, 0, String(log.stderr));
      assert.match(String(log.stdout), /one/);
    });
  });
});
