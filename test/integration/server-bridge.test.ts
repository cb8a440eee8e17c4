import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import Database from 'better-sqlite3';
import { connectHttp } from '../helpers/clients.js';
import {
  PADDOCK_BIN,
  runCli,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

/** The official client over stdio to `paddock mcp <args>`, with the bridge's pid. */
async function bridge(
  project: TempProject,
  args: string[] = [],
  name = 'bridge-test',
): Promise<{ client: Client; pid: number; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [PADDOCK_BIN, 'mcp', ...args],
    cwd: project.dir,
    env: project.env as Record<string, string>,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return { client, pid: transport.pid!, stderr: () => err };
}

/** A bridge as a plain child process, for raw lines and exit codes. */
function rawBridge(project: TempProject, args: string[] = []) {
  const child = spawn(process.execPath, [PADDOCK_BIN, 'mcp', ...args], {
    cwd: project.dir,
    env: project.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const replies = () =>
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id?: unknown; result?: unknown; error?: { message: string } });
  return { child, exit, replies, stdout: () => out, stderr: () => err };
}

const initialize = (id = 1) =>
  `${JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  })}\n`;

/** Writes one JSON-RPC line of about `mb` megabytes (a write_file call), with backpressure. */
async function writeHugeLine(stream: NodeJS.WritableStream, id: number, mb: number): Promise<void> {
  const write = (s: string | Buffer) =>
    new Promise<void>((resolve) => {
      if (stream.write(s)) resolve();
      else stream.once('drain', () => resolve());
    });
  await write(
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/workspace/x","content":"`,
  );
  const chunk = Buffer.alloc(1024 * 1024, 'a');
  for (let i = 0; i < mb; i++) await write(chunk);
  await write('"}}}\n');
}

/** Pids of `paddock serve` processes whose working directory is the project's. */
function serversOf(project: TempProject): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (
        argv.includes(PADDOCK_BIN) &&
        argv.includes('serve') &&
        readlinkSync(`/proc/${name}/cwd`) === project.dir
      )
        out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Every descendant of a host process (through /proc/<pid>/task/<tid>/children). */
function descendantsOf(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number) => {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const t of tasks) {
      let text = '';
      try {
        text = readFileSync(`/proc/${p}/task/${t}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const c of text.trim().split(/\s+/).filter(Boolean).map(Number)) {
        out.push(c);
        walk(c);
      }
    }
  };
  walk(pid);
  return out;
}

/** Whether a process is gone (or a zombie nobody reaped yet). */
function gone(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true;
  }
}

function auditCallers(project: TempProject): string[] {
  const db = new Database(join(project.dataDir, 'paddock.db'), { readonly: true });
  try {
    return (db.prepare('SELECT DISTINCT caller FROM tool_invocations').all() as { caller: string }[]).map(
      (r) => r.caller,
    );
  } finally {
    db.close();
  }
}

async function statusJson(project: TempProject): Promise<{
  running: boolean;
  pid?: number;
  sessions?: { id: string; computer: string; transport: string }[];
}> {
  const r = await runCli(project, ['status', '--json']);
  return JSON.parse(r.stdout);
}

describe('one server per data directory: bridges, HTTP and the socket', () => {
  const projects: TempProject[] = [];
  const fresh = (yaml?: string) => {
    const p = tempProject(yaml);
    projects.push(p);
    return p;
  };
  after(() => {
    for (const p of projects) p.cleanup();
  });

  it('two stdio bridges and an HTTP client are three sessions of one server process, each its own caller in the audit', async () => {
    const project = fresh();
    const serve = await startServe(project);
    try {
      const a = await bridge(project, ['--toolsets', 'computer'], 'client-a');
      const b = await bridge(project, ['--computer', 'shared-box'], 'client-b');
      const http = await connectHttp(serve.url, serve.token);
      for (const c of [a.client, b.client, http])
        await c.callTool({ name: 'get_computer_status', arguments: {} });
      const status = await statusJson(project);
      assert.equal(status.pid, serve.child.pid, 'the bridges attached to the running server');
      assert.deepEqual(serversOf(project), [serve.child.pid], 'no second server was started');
      const sessions = status.sessions ?? [];
      assert.equal(sessions.length, 3);
      assert.deepEqual(sessions.map((s) => s.transport).sort(), ['http', 'socket', 'socket']);
      assert.deepEqual(sessions.map((s) => s.computer).sort(), ['private', 'private', 'shared-box']);
      const callers = auditCallers(project).filter((c) => c.startsWith('mcp:'));
      assert.equal(callers.length, 3, `three sessions in the audit: ${callers.join(', ')}`);
      assert.deepEqual(new Set(callers), new Set(sessions.map((s) => `mcp:${s.id}`)));
      await a.client.close();
      await pollUntil(
        async () => (await statusJson(project)).sessions?.length === 2,
        'the closed bridge session to end',
      );
      await Promise.all([b.client.close(), http.close()]);
    } finally {
      await serve.stop();
    }
  });

  it('two bridges started at once with no server start exactly one, in the background, and both attach to it', async () => {
    const project = fresh();
    const [a, b] = await Promise.all([bridge(project), bridge(project)]);
    const servers = serversOf(project);
    assert.equal(servers.length, 1, `one server, found ${servers.join(', ')}`);
    const status = await statusJson(project);
    assert.equal(status.pid, servers[0]);
    assert.equal(status.sessions?.length, 2);
    assert.ok(
      existsSync(join(project.dataDir, 'logs', 'serve.log')),
      'the background server logs in the data directory',
    );
    const run = statSync(join(project.dataDir, 'run'));
    assert.equal(run.mode & 0o777, 0o700, 'the run directory is closed to other users');
    assert.equal(statSync(join(project.dataDir, 'run', 'paddock.sock')).mode & 0o777, 0o600);
    await Promise.all([a.client.close(), b.client.close()]);
    assert.ok(servers[0] && process.kill(servers[0], 0), 'bridges that end leave the server running');
    const stop = await runCli(project, ['stop']);
    assert.equal(stop.code, 0, stop.stderr);
    assert.match(stop.stdout, /Stopped the Paddock server/);
    assert.deepEqual(serversOf(project), []);
    assert.equal((await runCli(project, ['status'])).code, 1, 'status says no server runs');
  });

  it('kill -9 of a bridge ends its session and leaves the server and its computer running', async () => {
    const project = fresh();
    const serve = await startServe(project);
    try {
      // the bridge and the HTTP client share a named computer, so the client watches it outlive the bridge
      const a = await bridge(project, ['--computer', 'kept-box']);
      const launch = await a.client.callTool({ name: 'launch_computer', arguments: { profileId: 'shell' } });
      const launched = launch.structuredContent as { url: string; generation: number };
      assert.doesNotMatch(launched.url, /code=|token|key=|#/, 'the URL an agent gets carries no credential');
      assert.match(launched.url, /\/\?computer=named%3Akept-box$/, 'it opens the dock on that computer');
      assert.ok(!launched.url.includes(serve.token));
      const http = await connectHttp(serve.url, serve.token, 'paddock-test', { computer: 'kept-box' });
      await pollUntil(
        async () => {
          const s = (await http.callTool({ name: 'get_computer_status', arguments: {} }))
            .structuredContent as {
            lifecycle: string;
          };
          return s.lifecycle === 'running';
        },
        'the computer to run',
        60_000,
      );
      process.kill(a.pid, 'SIGKILL');
      await pollUntil(
        async () => (await statusJson(project)).sessions?.length === 1,
        'the killed bridge session to end',
      );
      const after = (await http.callTool({ name: 'get_computer_status', arguments: {} }))
        .structuredContent as {
        lifecycle: string;
        generation: number;
      };
      assert.equal(after.lifecycle, 'running');
      assert.equal(after.generation, launched.generation);
      assert.equal(serve.child.exitCode, null, 'the server is still running');
      await http.close();
    } finally {
      await serve.stop();
    }
  });

  it('kill -9 of the server leaves no sandbox process after the next start, and its stale socket is replaced', async () => {
    const project = fresh();
    const serve = await startServe(project);
    const http = await connectHttp(serve.url, serve.token);
    await http.callTool({ name: 'launch_computer', arguments: { profileId: 'shell' } });
    await pollUntil(
      async () => {
        const s = (await http.callTool({ name: 'get_computer_status', arguments: {} })).structuredContent as {
          lifecycle: string;
        };
        return s.lifecycle === 'running';
      },
      'the computer to run',
      60_000,
    );
    await http.callTool({
      name: 'run_command',
      arguments: { script: 'sleep 1000 & sleep 1000', timeoutMs: 300_000 },
    });
    const sandboxed = await pollUntil(() => {
      const family = descendantsOf(serve.child.pid!);
      const sleeps = family.filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('sleep\0');
        } catch {
          return false;
        }
      });
      return sleeps.length >= 2 ? family : null;
    }, 'the sleeps in the sandbox');
    assert.ok(sandboxed);
    await serve.stop('SIGKILL');
    await http.close().catch(() => {});
    assert.ok(existsSync(join(project.dataDir, 'run', 'paddock.sock')), 'the crash left its socket');
    const down = await runCli(project, ['status']);
    assert.equal(down.code, 1);
    assert.match(down.stdout, /crashed server left its socket/);
    const next = await bridge(project);
    await next.client.callTool({ name: 'get_computer_status', arguments: {} });
    await pollUntil(() => sandboxed.every(gone), 'no sandbox process of the old server');
    await next.client.close();
  });

  it('a second serve on the same data directory refuses with a message naming the running one', async () => {
    const project = fresh();
    const serve = await startServe(project);
    try {
      const second = await runCli(project, ['serve', '--port', '0']);
      assert.notEqual(second.code, 0);
      assert.match(second.stderr, /already runs for the data directory/);
      assert.match(second.stderr, new RegExp(`pid ${serve.child.pid}`));
      assert.equal(serve.child.exitCode, null);
    } finally {
      await serve.stop();
    }
  });

  it('a bridge whose configuration differs from the running server’s exits non-zero naming both files', async () => {
    const project = fresh('log:\n  level: warn\n');
    const other = join(project.dir, 'other.yaml');
    writeFileSync(other, 'log:\n  level: info\n');
    const serve = await startServe(project);
    try {
      const b = rawBridge(project, ['--config', other]);
      b.child.stdin.end(initialize());
      assert.equal(await b.exit, 1);
      assert.match(b.stderr(), new RegExp(join(project.dir, 'paddock.yaml').replace(/[.]/g, '\\.')));
      assert.match(b.stderr(), new RegExp(other.replace(/[.]/g, '\\.')));
      assert.equal(b.stdout(), '', 'nothing reached the client as if it were the server');
    } finally {
      await serve.stop();
    }
  });

  it('refuses an invalid computer name on the bridge and in the HTTP header', async () => {
    const project = fresh();
    const serve = await startServe(project);
    try {
      const b = rawBridge(project, ['--computer', '../Bad Name']);
      b.child.stdin.end();
      assert.equal(await b.exit, 2);
      assert.match(b.stderr(), /not a valid computer name/);
      const res = await fetch(`${serve.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${serve.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'paddock-computer': 'UPPER',
        },
        body: initialize().trim(),
      });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /not a valid computer name/);
    } finally {
      await serve.stop();
    }
  });

  it('answers a 200 MB line with a JSON-RPC error for its id, on the bridge and on the socket, and the session carries on', async () => {
    const project = fresh();
    const serve = await startServe(project);
    try {
      const b = rawBridge(project);
      b.child.stdin.write(initialize());
      await pollUntil(() => b.replies().length === 1, 'the initialize reply');
      await writeHugeLine(b.child.stdin, 7, 200);
      b.child.stdin.write('{"jsonrpc":"2.0","id":8,"method":"tools/list"}\n');
      const replies = await pollUntil(
        () => (b.replies().length >= 3 ? b.replies() : null),
        'both replies',
        120_000,
      );
      assert.ok(replies);
      const dropped = replies.find((r) => r.id === 7);
      assert.match(dropped?.error?.message ?? '', /over the limit/);
      assert.ok(replies.find((r) => r.id === 8)?.result, 'the next request is answered');
      b.child.stdin.end();
      assert.equal(await b.exit, 0);

      // straight to the socket, past the bridge: the server bounds its sessions too
      const { connect } = await import('node:net');
      const info = JSON.parse(readFileSync(join(project.dataDir, 'run', 'server.json'), 'utf8'));
      const socket = connect(info.socket);
      let text = '';
      socket.on('data', (d: Buffer) => {
        text += d.toString();
      });
      socket.write(`${JSON.stringify({ paddock: 1, op: 'mcp', key: info.key })}\n${initialize()}`);
      await pollUntil(() => text.split('\n').filter(Boolean).length >= 2, 'welcome and initialize reply');
      await writeHugeLine(socket, 7, 200);
      socket.write('{"jsonrpc":"2.0","id":8,"method":"tools/list"}\n');
      const lines = await pollUntil(
        () => {
          const l = text.split('\n').filter(Boolean);
          return l.length >= 4 ? l.map((x) => JSON.parse(x)) : null;
        },
        'both replies on the socket',
        120_000,
      );
      assert.ok(lines);
      assert.match(lines.find((r) => r.id === 7)?.error?.message ?? '', /over the limit/);
      assert.ok(lines.find((r) => r.id === 8)?.result);
      socket.destroy();
    } finally {
      await serve.stop();
    }
  });

  it('refuses a socket client without the key of server.json, and an opening line that never ends', async () => {
    const project = fresh();
    const serve = await startServe(project);
    try {
      const { connect } = await import('node:net');
      const socket = connect(join(project.dataDir, 'run', 'paddock.sock'));
      let text = '';
      socket.on('data', (d: Buffer) => {
        text += d.toString();
      });
      socket.write(`${JSON.stringify({ paddock: 1, op: 'open', key: 'guess' })}\n`);
      await new Promise((r) => socket.once('close', r));
      const reply = JSON.parse(text);
      assert.equal(reply.ok, false);
      assert.equal(reply.code, 'PERMISSION_REQUIRED');
      assert.doesNotMatch(text, /login\?code=/);

      // an opening line that never ends is refused once it passes 64 KiB, and the server lives on
      const endless = connect(join(project.dataDir, 'run', 'paddock.sock'));
      let answer = '';
      endless.on('data', (d: Buffer) => {
        answer += d.toString();
      });
      endless.on('error', () => {});
      endless.write('{"paddock":1,"op":"status","key":"'.padEnd(100_000, 'k'));
      await new Promise((r) => endless.once('close', r));
      assert.match(answer, /opening line is over/);
      assert.equal((await runCli(project, ['status'])).code, 0, 'the server still answers');
    } finally {
      await serve.stop();
    }
  });

  it('a bridge whose server is killed reports it on stderr and exits non-zero', async () => {
    const project = fresh();
    const serve = await startServe(project);
    const b = rawBridge(project);
    b.child.stdin.write(initialize());
    await pollUntil(() => b.replies().length === 1, 'the initialize reply');
    await serve.stop('SIGKILL');
    assert.equal(await b.exit, 1);
    assert.match(
      b.stderr(),
      /connection to the Paddock server \(pid \d+\) .* was lost: it stopped or crashed/,
    );
    assert.match(b.stderr(), /Restart this MCP server/);
  });

  it('paddock open prints a fresh single-use login link that signs in to the dock once, and hands it to $BROWSER when set', async () => {
    const project = fresh();
    const serve = await startServe(project);
    try {
      const env = { ...project.env, BROWSER: '', DISPLAY: '', WAYLAND_DISPLAY: '' };
      const r = await runCli({ ...project, env }, ['open']);
      assert.equal(r.code, 0, r.stderr);
      const link = r.stdout.trim();
      assert.match(link, new RegExp(`^${serve.url}/login\\?code=`));
      assert.match(r.stderr, /No browser found/);
      const first = await fetch(link, { redirect: 'manual' });
      assert.equal(first.status, 200);
      assert.match(first.headers.get('set-cookie') ?? '', /paddock_session=/);
      const again = await fetch(link, { redirect: 'manual', headers: { accept: 'text/html' } });
      assert.equal(again.status, 401, 'a link works once');
      assert.match(await again.text(), /paddock open/, 'the sign-in page names the command');

      // with a browser configured, the new link goes to it
      const seen = join(project.dir, 'browser-saw');
      const browser = join(project.dir, 'fake-browser');
      writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$1" > ${seen}\n`, { mode: 0o755 });
      const opened = await runCli({ ...project, env: { ...env, BROWSER: browser } }, ['open']);
      assert.equal(opened.code, 0, opened.stderr);
      const second = opened.stdout.trim();
      assert.notEqual(second, link, 'every open is a new link');
      await pollUntil(
        () => existsSync(seen) && readFileSync(seen, 'utf8') === second,
        'the browser to get the link',
      );
    } finally {
      await serve.stop();
    }
  });
});
