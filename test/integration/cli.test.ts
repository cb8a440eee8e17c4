import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PADDOCK_BIN, runCli, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

describe('paddock CLI', () => {
  it('exits 2 with one path: message line per problem on an invalid config', async () => {
    const p = tempProject('server:\n  port: nope\nextra: 1\n');
    try {
      const r = await runCli(p, ['tools', 'list']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /server\.port: /);
      assert.match(r.stderr, /unknown key "extra"/);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    } finally {
      p.cleanup();
    }
  });

  it('exits 2 naming the rule when a policy rule is invalid (*, *.com, relative roots)', async () => {
    for (const yaml of [
      'policy:\n  http:\n    allow: ["*"]\n',
      'policy:\n  http:\n    allow: ["*.com"]\n',
      'policy:\n  files:\n    read: [relative/dir]\n',
    ]) {
      const p = tempProject(yaml);
      try {
        const r = await runCli(p, ['tools', 'list']);
        assert.equal(r.code, 2, yaml);
        assert.match(r.stderr, /policy: /);
      } finally {
        p.cleanup();
      }
    }
  });

  it('refuses to serve without auth on a non-loopback --host', async () => {
    const p = tempProject('server:\n  auth: none\n');
    try {
      const r = await runCli(p, ['serve', '--host', '0.0.0.0', '--port', '0']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /loopback/);
    } finally {
      p.cleanup();
    }
  });

  it('init writes a starter config that loads, and the .paddock layout', async () => {
    const p = tempProject();
    try {
      const r = await runCli(p, ['init']);
      assert.equal(r.code, 0, r.stderr);
      for (const f of ['paddock.yaml', '.paddock/agents', '.paddock/skills', '.paddock/mcp_servers.yaml']) {
        assert.ok(existsSync(join(p.dir, f)), f);
      }
      const list = await runCli(p, ['tools', 'list', '--json']);
      assert.equal(list.code, 0, list.stderr);
      assert.ok(JSON.parse(list.stdout).some((t: { name: string }) => t.name === 'http_get'));
    } finally {
      p.cleanup();
    }
  });

  it('tools call runs through the gateway and leaves an audit row with caller cli', async () => {
    const p = tempProject();
    try {
      const r = await runCli(p, ['tools', 'call', 'save_memory', '-'], '{"content":"from the cli"}');
      assert.equal(r.code, 0, r.stderr);
      const a = await runCli(p, ['audit', '--json', '--caller', 'cli']);
      assert.match(a.stdout, /from the cli/);
      const bad = await runCli(p, ['tools', 'call', 'save_memory', '{"nope":1}']);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /INVALID_ARGUMENT/);
      const failed = await runCli(p, ['audit', '--failed', '--json']);
      assert.match(failed.stdout, /INVALID_ARGUMENT/);
    } finally {
      p.cleanup();
    }
  });

  it('audit --follow prints rows committed by another process as they arrive', async () => {
    const p = tempProject();
    const follower = spawn(process.execPath, [PADDOCK_BIN, 'audit', '--follow', '--json'], {
      cwd: p.dir,
      env: p.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    follower.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    try {
      // the follower has created the database once it prints nothing and keeps running
      await pollUntil(() => existsSync(join(p.dataDir, 'paddock.db')), 'the follower to open the log');
      const marker = `followed-${Date.now()}`;
      const r = await runCli(p, ['tools', 'call', 'save_memory', JSON.stringify({ content: marker })]);
      assert.equal(r.code, 0, r.stderr);
      await pollUntil(() => out.includes(marker), 'the row to reach the follower');
      assert.match(JSON.parse(out.trim().split('\n').at(-1)!).input, new RegExp(marker));
    } finally {
      follower.kill('SIGTERM');
      p.cleanup();
    }
  });

  it('policy check prints allow, ask or deny with the deciding rule and sets the exit code', async () => {
    const p = tempProject(
      'policy:\n  http:\n    allow: ["*.example.com"]\n    hosts: { api.example.com: 192.0.2.10 }\n    ask: ["*.ask.test"]\n  tcp:\n    allow: ["git.example.com:22"]\n',
    );
    try {
      const allow = await runCli(p, ['policy', 'check', 'http', 'https://api.example.com/x']);
      assert.equal(allow.code, 0, allow.stderr);
      assert.match(allow.stdout, /allow/i);
      assert.match(allow.stdout, /\*\.example\.com/);
      const deny = await runCli(p, ['policy', 'check', 'http', 'https://example.com/x']);
      assert.equal(deny.code, 1);
      assert.match(deny.stdout, /deny/i);
      const traversal = await runCli(p, ['policy', 'check', 'file.read', '/workspace/../etc/shadow']);
      assert.equal(traversal.code, 1);
      // a computer's connection: tcp rules, ask, and IP literals (no lookup leaves the machine)
      const ssh = await runCli(p, ['policy', 'check', '--no-dns', 'tcp', 'git.example.com:22']);
      assert.equal(ssh.code, 0, ssh.stderr);
      assert.match(ssh.stdout, /allow\s+rule: tcp\.allow\[0\]=git\.example\.com:22/);
      const https = await runCli(p, ['policy', 'check', 'tcp', 'api.example.com:443']);
      assert.equal(https.code, 0, https.stderr);
      assert.match(https.stdout, /addresses: 192\.0\.2\.10/);
      const asked = await runCli(p, ['policy', 'check', '--no-dns', 'tcp', 'pkgs.ask.test:443']);
      assert.equal(asked.code, 1);
      assert.match(asked.stdout, /^ask\s+rule: http\.ask\[0\]=\*\.ask\.test/m);
      const url = await runCli(p, ['policy', 'check', '--no-dns', 'http', 'https://pkgs.ask.test/x']);
      assert.equal(url.code, 1);
      assert.match(url.stdout, /^deny\s+rule: default-deny/m);
      assert.match(url.stdout, /a computer's connection to pkgs\.ask\.test:443:\nask\s+rule: http\.ask\[0\]/);
      const literal = await runCli(p, ['policy', 'check', 'tcp', '127.0.0.1:22']);
      assert.equal(literal.code, 1);
      assert.match(literal.stdout, /deny\s+rule: ip-literal/);
    } finally {
      p.cleanup();
    }
  });

  it('doctor reports each check and how to fix a failure', async () => {
    const p = tempProject();
    try {
      writeFileSync(join(p.dir, 'paddock.yaml'), 'nope: 1\n');
      const r = await runCli(p, ['doctor']);
      assert.equal(r.code, 1);
      assert.match(r.stdout, /ok\s+node/);
      assert.match(r.stdout, /FAIL\s+config/);
      assert.match(r.stdout, /fix: /);
      // as root with loop devices each computer has a disk of its own; otherwise a warning says
      // that /workspace is not limited
      assert.match(
        r.stdout,
        /ok\s+disk quota\s+each computer gets a disk image|warn\s+disk quota\s+not enforced on \/workspace: /,
      );
    } finally {
      p.cleanup();
    }
  });
});
