/**
 * The `shell` built-in holds a program to its exec rule in the kernel: an operator's natural
 * first config (git, find, tar, sed, awk, xargs, make, node, npm, ssh, zip and vim allowed by
 * name, no argument rules) must not turn any of them into a launcher or a writer outside
 * `files.write`. Each trick runs twice: through `run_command` (not bound by exec rules), where it
 * must work — so the test can fail — and through `shell`, where nothing else may run and nothing
 * outside the write roots may change.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ComputerManager } from '../../src/computer/manager.js';
import { loadConfig } from '../../src/config/load.js';
import { createPaddock } from '../../src/main.js';
import { silentLogger } from '../../src/shared/logger.js';
import { OWNER } from '../../src/shared/principal.js';
import { pollUntil } from '../helpers/poll.js';
import { type Call, launchRunning, toolCaller, withComputer } from '../unit/computer/fixture.js';

const ALLOWED = ['git', 'find', 'tar', 'sed', 'awk', 'xargs', 'make', 'node', 'npm', 'ssh', 'zip', 'vim'];

const policy = {
  files: { read: ['/workspace', '/tmp'], write: ['/workspace'] },
  exec: { allow: ALLOWED.map((name) => ({ name })) },
};

/**
 * A payload in sh's own words (builtins only): if a shell runs it, `/workspace/ran-<tag>` appears
 * (another program ran) and it tries to write `/tmp/out-<tag>` (outside the write roots).
 */
const payload = (tag: string) => `echo ran > /workspace/ran-${tag}; echo x > /tmp/out-${tag}`;

/** Each trick: its argv for a tag (the markers it leaves name the tag). */
const TRICKS: Record<string, (tag: string) => string[]> = {
  'git -c core.fsmonitor': (t) => [
    'git',
    '-C',
    '/workspace/repo',
    '-c',
    `core.fsmonitor=${payload(t)}; false`,
    'status',
  ],
  'git -c alias with !': (t) => ['git', '-C', '/workspace/repo', '-c', `alias.zz=!${payload(t)}`, 'zz'],
  'git alias with ! planted in the repository': () => ['git', '-C', '/workspace/repo', 'st'],
  'find -exec': (t) => ['find', '/workspace/seed', '-exec', 'sh', '-c', payload(t), ';'],
  'find -fprint': (t) => ['find', '/workspace/seed', '-fprint', `/tmp/out-${t}`],
  'tar --to-command': (t) => [
    'tar',
    '-xf',
    '/workspace/seed.tar',
    '-C',
    '/workspace',
    `--to-command=${payload(t)}`,
  ],
  'tar --checkpoint-action': (t) => [
    'tar',
    '-cf',
    '/workspace/cp.tar',
    '--checkpoint=1',
    `--checkpoint-action=exec=${payload(t)}`,
    '/workspace/seed',
  ],
  'tar extracting outside': (t) => ['tar', '-xf', `/workspace/out-${t}.tar`, '-C', '/tmp'],
  'sed e': (t) => ['sed', '-n', `1e ${payload(t)}`, '/workspace/seed'],
  'sed w': (t) => ['sed', '-n', `w /tmp/out-${t}`, '/workspace/seed'],
  'awk system()': (t) => ['awk', `BEGIN{system("${payload(t)}")}`],
  'awk print >': (t) => ['awk', `BEGIN{print "x" > "/tmp/out-${t}"}`],
  'xargs sh': (t) => ['xargs', 'sh', '-c', payload(t)],
  'make --eval': (t) => ['make', '-f', '/dev/null', `--eval=all: ; ${payload(t)}`, 'all'],
  'node -e child_process': (t) => [
    'node',
    '-e',
    `require("child_process").execSync(${JSON.stringify(payload(t))})`,
  ],
  'node -e fs': (t) => ['node', '-e', `require("fs").writeFileSync("/tmp/out-${t}", "x")`],
  'npm exec': (t) => ['npm', 'exec', '--offline', '--yes', '-c', payload(t)],
  // ssh runs `exec COMMAND` in a shell, so the payload gets a shell of its own
  'ssh -o ProxyCommand': (t) => [
    'ssh',
    '-o',
    `ProxyCommand=sh -c '${payload(t)}'`,
    '-o',
    'BatchMode=yes',
    'example.invalid',
  ],
  'zip -TT': (t) => ['zip', '-q', '/workspace/z.zip', '/workspace/seed', '-T', '-TT', `${payload(t)} #`],
  "vim -c '!…'": (t) => ['vim', '-es', '-N', '-u', 'NONE', '-c', `!${payload(t)}`, '-c', 'qa!'],
  'vim -c w': (t) => [
    'vim',
    '-es',
    '-N',
    '-u',
    'NONE',
    '-c',
    `w /tmp/out-${t}`,
    '-c',
    'qa!',
    '/workspace/seed',
  ],
};

/** Writes that only another program (a shell) could leave behind. */
const RUNS_A_SHELL = new Set(
  Object.keys(TRICKS).filter(
    (k) =>
      !['find -fprint', 'tar extracting outside', 'sed w', 'awk print >', 'node -e fs', 'vim -c w'].includes(
        k,
      ),
  ),
);

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/** Runs a script unconfined and returns its stdout (fails the test on a non-zero exit). */
async function run(manager: ComputerManager, script: string): Promise<string> {
  const r = await manager.runCommand({ script, waitMs: 60_000, timeoutMs: 60_000 });
  assert.equal(r.exitCode, 0, `${script}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** The names in a directory, seen by an unconfined job. */
async function names(manager: ComputerManager, dir: string): Promise<string[]> {
  return (await run(manager, `ls -A ${dir}`)).split('\n').filter((n) => n.length > 0);
}

/** A repository, a seed file, and an archive per tag whose member would land in /tmp. */
async function plant(manager: ComputerManager, tags: string[]): Promise<void> {
  await run(
    manager,
    [
      'set -e',
      'cd /workspace && echo seed > seed && tar -cf seed.tar seed',
      'mkdir -p repo && cd repo && git init -q && git config user.name Ada && git config user.email ada@example.com',
      'echo one > a.txt && git add a.txt && git commit -q -m one',
      ...tags.map(
        (t) =>
          `mkdir -p /tmp/mk && echo x > /tmp/mk/out-${t} && tar -cf /workspace/out-${t}.tar -C /tmp/mk out-${t} && rm -r /tmp/mk`,
      ),
    ].join('\n'),
  );
}

async function callShell(call: Call, argv: string[]): Promise<Record<string, unknown>> {
  return call('shell', { argv, cwd: '/workspace', timeoutMs: 30_000 });
}

describe('a whitelisted program is not a launcher', { concurrency: false }, () => {
  it('every trick works under run_command, and under shell runs nothing else and writes nothing outside the write roots', async () => {
    await withComputer({ policy }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      const tricks = Object.entries(TRICKS);
      const tags = tricks.map((_, i) => `t${i}`);
      await plant(manager, [...tags.map((t) => `${t}-free`), ...tags]);
      for (const [i, [name, argvOf]] of tricks.entries()) {
        const tag = tags[i]!;
        await run(manager, `git -C /workspace/repo config alias.st '!${payload(`${tag}-free`)}'`);
        await run(
          manager,
          `cd /workspace && ${argvOf(`${tag}-free`).map(shellQuote).join(' ')} </dev/null >/dev/null 2>&1; true`,
        );
        const tmp = await names(manager, '/tmp');
        assert.ok(
          tmp.includes(`out-${tag}-free`),
          `${name}: the trick does not even work unconfined (${tmp.join(' ')})`,
        );
        await run(manager, `git -C /workspace/repo config alias.st '!${payload(tag)}'`);
        const r = await callShell(call, argvOf(tag));
        const confinement = r.confinement as { rule: string; write: string[] };
        assert.deepEqual(confinement.write, ['/workspace'], name);
        const after = await names(manager, '/tmp');
        assert.ok(
          !after.includes(`out-${tag}`),
          `${name} wrote outside the write roots: ${JSON.stringify(r)}`,
        );
        const workspace = await names(manager, '/workspace');
        if (RUNS_A_SHELL.has(name)) {
          assert.ok(workspace.includes(`ran-${tag}-free`), `${name}: the control did not run a shell`);
          assert.ok(!workspace.includes(`ran-${tag}`), `${name} ran another program: ${JSON.stringify(r)}`);
        }
      }
    });
  });

  it('legitimate uses keep working: git status and commit, find -name, tar into the workspace, sed -i, node writing the workspace', async () => {
    await withComputer({ policy }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      await plant(manager, []);
      await run(
        manager,
        'echo two > /workspace/repo/b.txt && printf "require(\\"fs\\").writeFileSync(\\"/workspace/from-node.txt\\", \\"node\\")\\n" > /workspace/w.js',
      );
      const ok = async (argv: string[]) => {
        const r = await callShell(call, argv);
        assert.equal(r.exitCode, 0, `${argv.join(' ')}: ${String(r.stderr)}`);
        return String(r.stdout);
      };
      assert.match(await ok(['git', '-C', '/workspace/repo', 'status', '--short']), /\?\? b\.txt/);
      await ok(['git', '-C', '/workspace/repo', 'add', 'b.txt']);
      await ok(['git', '-C', '/workspace/repo', 'commit', '-q', '-m', 'two']);
      assert.match(await ok(['git', '-C', '/workspace/repo', 'log', '--format=%s']), /^two\none\n$/);
      assert.match(await ok(['find', '/workspace', '-name', '*.txt']), /\/workspace\/repo\/b\.txt/);
      await run(manager, 'mkdir /workspace/x');
      await ok(['tar', '-xf', '/workspace/seed.tar', '-C', '/workspace/x']);
      await ok(['sed', '-i', 's/seed/changed/', '/workspace/x/seed']);
      await ok(['node', '/workspace/w.js']);
      assert.equal(await run(manager, 'cat /workspace/x/seed /workspace/from-node.txt'), 'changed\nnode');
      // the answer says what the program was held to
      const r = await callShell(call, ['find', '/workspace/seed']);
      assert.deepEqual(r.confinement, {
        rule: 'exec.allow[1]=find',
        execute: ['/usr/bin/find'],
        write: ['/workspace'],
      });
    });
  });

  it('names the rule when the program meets a refusal, and lets a rule name helpers it may start', async () => {
    const withHelpers = {
      ...policy,
      exec: { allow: [{ name: 'find', helpers: ['/usr/bin/touch'] }, { name: 'awk' }] },
    };
    await withComputer({ policy: withHelpers }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      await run(manager, 'echo seed > /workspace/seed');
      const helped = await callShell(call, [
        'find',
        '/workspace/seed',
        '-exec',
        'touch',
        '/workspace/touched',
        ';',
      ]);
      assert.equal(helped.exitCode, 0, String(helped.stderr));
      assert.ok((await names(manager, '/workspace')).includes('touched'), 'the named helper ran');
      const refused = await callShell(call, [
        'find',
        '/workspace/seed',
        '-exec',
        'rm',
        '/workspace/seed',
        ';',
      ]);
      assert.match(String(refused.stderr), /Permission denied/);
      const note = String((refused.confinement as { note?: string }).note);
      assert.match(note, /exec\.allow\[0\]=find/);
      assert.match(note, /\/usr\/bin\/find/);
      assert.match(note, /\/usr\/bin\/touch/);
      assert.ok((await names(manager, '/workspace')).includes('seed'), 'rm did not run');
    });
  });

  it('a program started through the dynamic loader by hand is still held to the write roots', async () => {
    // Landlock checks execve, not mmap: the loader must stay executable for any dynamic program,
    // so `find -exec ld.so /bin/sh` can map a shell into a process. The write rules still hold.
    await withComputer({ policy }, async ({ manager, ctx }) => {
      const call = toolCaller(manager, ctx);
      await launchRunning(manager);
      await run(manager, 'echo seed > /workspace/seed');
      const loader = (await run(manager, 'readlink -f /lib64/ld-linux-x86-64.so.2')).trim();
      await callShell(call, [
        'find',
        '/workspace/seed',
        '-exec',
        loader,
        '/bin/sh',
        '-c',
        'echo x > /tmp/out-loader',
        ';',
      ]);
      assert.ok(!(await names(manager, '/tmp')).includes('out-loader'));
    });
  });
});

describe('a confined program and the tool channel', () => {
  it('calls tools through the Python and Node clients while its writes stay in the write roots', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-confine-channel-'));
    const yaml = [
      'computer:',
      '  defaultProfile: python',
      'policy:',
      '  files:',
      '    write: [/workspace]',
      '  exec:',
      '    allow: [{ name: python3 }, { name: node }]',
      '',
    ].join('\n');
    writeFileSync(join(dir, 'paddock.yaml'), yaml);
    const paddock = await createPaddock(loadConfig({ cwd: dir, env: { PADDOCK_DATA: join(dir, 'data') } }), {
      logger: silentLogger(),
    });
    const caller = { caller: 'mcp:confine', principal: OWNER, via: 'direct' as const, attended: true };
    try {
      const call = async (name: string, input: Record<string, unknown>) => {
        const outcome = await paddock.gateway.call(name, input, caller);
        if (!outcome.ok) throw new Error(`${name}: ${JSON.stringify(outcome.error.toJSON())}`);
        return outcome.result.structured as Record<string, unknown>;
      };
      await call('launch_computer', { profileId: 'python' });
      await pollUntil(
        async () => (await call('get_computer_status', {})).lifecycle === 'running',
        'the computer to run',
        60_000,
      );
      const py = await call('shell', {
        argv: [
          'python3',
          '-c',
          'import paddock_tool\npaddock_tool.call_tool("save_memory", {"content": "from confined python"})\ntry:\n  open("/tmp/out-py", "w")\nexcept PermissionError:\n  print("refused")',
        ],
      });
      assert.equal(py.exitCode, 0, String(py.stderr));
      assert.equal(py.stdout, 'refused\n');
      const node = await call('shell', {
        argv: [
          'node',
          '-e',
          'require("paddock-tool").callTool("save_memory", {content: "from confined node"}).then(() => console.log("called"))',
        ],
      });
      assert.equal(node.exitCode, 0, String(node.stderr));
      assert.equal(node.stdout, 'called\n');
      assert.equal(py.toolCalls, 1);
      assert.equal(node.toolCalls, 1);
    } finally {
      await paddock.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
