import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { fixturePath } from '../fixtures/mcp/harness.js';
import { agentMd, TEST_KEY, writeProjectFiles } from '../fixtures/providers/agents-project.js';
import { startScriptedProvider } from '../fixtures/providers/scripted-provider.js';
import {
  PADDOCK_BIN,
  runCli,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

/** A project with one eager upstream server that records every message it receives. */
function projectWithUpstream(): TempProject & { record: string } {
  const project = tempProject('computer:\n  autoLaunch: false\n');
  const record = join(project.dir, 'fx-record.jsonl');
  mkdirSync(join(project.dir, '.paddock'));
  writeFileSync(
    join(project.dir, '.paddock', 'mcp_servers.yaml'),
    [
      'mcpServers:',
      '  fx:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${[fixturePath('stdio-server'), '--mode', 'normal', '--record', record].map((a) => JSON.stringify(a)).join(', ')}]`,
      '    startup: eager',
      '    permissions:',
      '      echo: auto',
    ].join('\n'),
  );
  return { ...project, record };
}

/** How many times the upstream fixture was started (each start begins with `initialize`). */
function upstreamStarts(record: string): number {
  if (!existsSync(record)) return 0;
  return readFileSync(record, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"method":"initialize"')).length;
}

/** The audit rows of `tool` with the pid of the process that wrote them. */
function auditRows(
  project: TempProject,
  tool: string,
): { caller: string; owner_pid: number; success: number }[] {
  const db = new Database(join(project.dataDir, 'paddock.db'), { readonly: true });
  try {
    return db
      .prepare('SELECT caller, owner_pid, success FROM tool_invocations WHERE tool = ? ORDER BY seq')
      .all(tool) as { caller: string; owner_pid: number; success: number }[];
  } finally {
    db.close();
  }
}

describe('acting CLI commands and the running server', () => {
  it('with a server running, `tools call` runs inside it: its audit row is the server’s and no second upstream server starts', async () => {
    const project = projectWithUpstream();
    const serve = await startServe(project);
    try {
      await pollUntil(() => upstreamStarts(project.record) === 1, 'the server to start its upstream server');
      const r = await runCli(project, ['tools', 'call', 'fx_echo', '{"message":"from the cli"}']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /from the cli/);
      const rows = auditRows(project, 'fx_echo');
      assert.equal(rows.length, 1);
      assert.equal(rows[0]?.caller, 'cli');
      assert.equal(rows[0]?.owner_pid, serve.child.pid, 'the row was written by the server process');
      assert.equal(upstreamStarts(project.record), 1, 'the CLI started no upstream server of its own');
      const received = readFileSync(project.record, 'utf8');
      assert.match(received, /from the cli/, 'the server’s upstream server received the call');
    } finally {
      await serve.stop();
      project.cleanup();
    }
  });

  it('with a server running, a computer that `tools call launch_computer` boots is the server’s and outlives the command', async () => {
    const project = tempProject('computer:\n  autoLaunch: false\n');
    const serve = await startServe(project);
    try {
      const r = await runCli(project, ['tools', 'call', 'launch_computer', '{"profileId":"shell"}']);
      assert.equal(r.code, 0, r.stderr);
      const { generation } = JSON.parse(r.stdout) as { generation: number };
      assert.ok(Number.isInteger(generation), r.stdout);
      // the CLI has exited; a computer of its own would have stopped with it
      const running = await pollUntil(
        async () => {
          const status = await runCli(project, ['status', '--json']);
          const computers = (
            JSON.parse(status.stdout) as { computers: { generation: number; lifecycle: string }[] }
          ).computers;
          return computers.find((c) => c.generation === generation && c.lifecycle === 'running');
        },
        `generation ${generation} running in the server`,
        60_000,
      );
      assert.ok(running);
      const rows = auditRows(project, 'launch_computer');
      assert.equal(rows.at(-1)?.owner_pid, serve.child.pid);
      // the server's own callers see the same computer
      const seen = await runCli(project, ['tools', 'call', 'get_computer_status', '{}']);
      assert.equal((JSON.parse(seen.stdout) as { generation: number }).generation, generation);
    } finally {
      await serve.stop();
      project.cleanup();
    }
  });

  it('without a server, acting commands run in the command alone and answer exactly as the server does', async () => {
    const project = projectWithUpstream();
    const commands = [
      ['tools', 'call', 'fx_echo', '{"message":"same answer"}'],
      ['tools', 'call', 'no_such_tool', '{}'],
      ['tools', 'call', 'fx_echo', '[1,'],
      ['servers', 'tools', 'no_such_server'],
      ['servers', 'call', 'fx_fail', '{}'],
      ['agents', 'show', 'no_such_run'],
      ['tools', 'list'],
    ];
    try {
      const alone = [];
      for (const args of commands) alone.push(await runCli(project, args));
      assert.equal(existsSync(join(project.dataDir, 'run', 'server.json')), false, 'no server was started');
      assert.ok(upstreamStarts(project.record) >= 1, 'the command started its own upstream server');
      const ownRows = auditRows(project, 'fx_echo');
      assert.equal(ownRows.length, 1);
      assert.equal(ownRows[0]?.caller, 'cli');

      const serve = await startServe(project);
      try {
        for (const [i, args] of commands.entries()) {
          const inServer = await runCli(project, args);
          assert.deepEqual(inServer, alone[i], `paddock ${args.join(' ')}`);
        }
        const rows = auditRows(project, 'fx_echo');
        assert.equal(rows.length, 2);
        assert.notEqual(rows[0]?.owner_pid, serve.child.pid);
        assert.equal(rows[1]?.owner_pid, serve.child.pid);
      } finally {
        await serve.stop();
      }
    } finally {
      project.cleanup();
    }
  });

  it('refuses an acting command that would load another configuration than the running server, naming both', async () => {
    const project = tempProject('computer:\n  autoLaunch: false\n');
    writeFileSync(join(project.dir, 'other.yaml'), 'computer:\n  autoLaunch: false\n');
    const serve = await startServe(project);
    try {
      const r = await runCli(project, [
        'tools',
        'call',
        'get_computer_status',
        '{}',
        '--config',
        'other.yaml',
      ]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /CONFIG_MISMATCH/);
      assert.match(r.stderr, /other\.yaml/);
      assert.equal(auditRows(project, 'get_computer_status').length, 0, 'nothing ran');
    } finally {
      await serve.stop();
      project.cleanup();
    }
  });

  it('with a server running, `agents run` runs the agent inside it, with the server’s environment and audit', async () => {
    const provider = await startScriptedProvider({ apiKey: TEST_KEY });
    const project = tempProject();
    writeProjectFiles(project.dir, {
      paddockYaml: () => 'computer:\n  autoLaunch: false\n',
      agents: {
        greeter: agentMd(
          'name: greeter\ndescription: Says hello.\nprovider: openai\nmodel: gpt-test\ntools: [save_memory]',
          'Greet the team.',
        ),
      },
    });
    // the key lives in the server's environment only: a run in the CLI's own process would fail
    const serverEnv = { ...project.env, OPENAI_BASE_URL: provider.openaiBaseUrl, OPENAI_API_KEY: TEST_KEY };
    delete project.env.OPENAI_API_KEY;
    project.env.OPENAI_BASE_URL = provider.openaiBaseUrl;
    const serve = await startServe({ ...project, env: serverEnv });
    try {
      provider.script([
        { toolCalls: [{ name: 'save_memory', arguments: { content: 'greeted' } }] },
        { text: 'Hello, team!' },
      ]);
      const r = await runCli(project, ['agents', 'run', 'greeter', '--input', 'Say hello.']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'Hello, team!\n');
      assert.match(r.stderr, /greeter\s+manual\s+succeeded/);
      const rows = auditRows(project, 'save_memory');
      assert.equal(rows.length, 1);
      assert.match(rows[0]!.caller, /^agent:/);
      assert.equal(rows[0]!.owner_pid, serve.child.pid);

      // Ctrl-C of the CLI cancels the run in the server, and the CLI reports it as it would its own
      provider.script([{ text: 'too late', delayMs: 600_000 }]);
      const seen = provider.requests.length;
      const child = spawn(process.execPath, [PADDOCK_BIN, 'agents', 'run', 'greeter'], {
        cwd: project.dir,
        env: project.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      await pollUntil(() => provider.requests.length > seen, 'the run to ask the model', 30_000);
      child.kill('SIGINT');
      assert.equal(await exited, 1);
      assert.match(err, /greeter\s+manual\s+cancelled/);
    } finally {
      await serve.stop();
      await provider.close();
      project.cleanup();
    }
  });
});
