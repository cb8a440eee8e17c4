/**
 * Mutated MCP messages, over stdio (through `paddock mcp`) and over HTTP, never crash, hang or
 * bloat the server: after every batch the same session still answers a ping, every line the
 * server writes is one JSON-RPC message, and at the end fresh clients work and the server's
 * memory stayed bounded. Seeds are fixed and printed (FUZZ_SEED replays a run); FUZZ_MESSAGES
 * raises the count per transport (the bench's size is 100,000).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectHttp, connectStdio } from '../helpers/clients.js';
import { deepNesting, mutate, mutateValue, random } from '../helpers/fuzz.js';
import {
  PADDOCK_BIN,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const MESSAGES = Number(process.env.FUZZ_MESSAGES ?? 1500);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_201);
const BATCH = 100;

/** Valid messages a client might send; the fuzzer starts from these. */
function corpus(): unknown[] {
  const call = (name: string, args: unknown) => ({
    jsonrpc: '2.0',
    id: 5,
    method: 'tools/call',
    params: { name, arguments: args, _meta: { progressToken: 'p1' } },
  });
  return [
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { elicitation: {}, roots: { listChanged: true } },
        clientInfo: { name: 'fuzz', version: '1' },
      },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'ping' },
    { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 'abc' } },
    { jsonrpc: '2.0', id: 4, method: 'resources/list' },
    { jsonrpc: '2.0', id: 4, method: 'prompts/list' },
    { jsonrpc: '2.0', id: 4, method: 'logging/setLevel', params: { level: 'debug' } },
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'x' } },
    { jsonrpc: '2.0', id: 99, result: {} },
    [{ jsonrpc: '2.0', id: 6, method: 'ping' }],
    call('list_profiles', { query: 'shell' }),
    call('get_computer_status', {}),
    call('recall_memory', { query: 'deploy notes', limit: 5 }),
    call('save_memory', { content: 'fuzzed memory', tags: ['a', 'b'] }),
    call('read_file', { path: '/workspace/a.txt' }),
    call('list_files', { path: '/workspace' }),
    call('http_get', { url: 'http://127.0.0.1:9/x', headers: [{ name: 'a', value: 'b' }] }),
    call('read_logs', { limit: 10 }),
  ];
}

/** One fuzzed message: a structural change of a valid one, its bytes mutated, or an oddity. */
function fuzzedLine(rnd: () => number, seeds: unknown[]): Buffer {
  const base = seeds[Math.floor(rnd() * seeds.length)];
  const r = rnd();
  if (r < 0.45) return Buffer.from(JSON.stringify(mutateValue(base, rnd)));
  if (r < 0.9) return mutate(Buffer.from(JSON.stringify(base)), rnd);
  if (r < 0.93) return Buffer.from(deepNesting(1000 + Math.floor(rnd() * 100_000)));
  if (r < 0.96)
    return Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"ping","params":${'{"a":'.repeat(5000)}`);
  return Buffer.from([0xff, 0xfe, 0x00, 0x1b, 0x5b, 0x32, 0x4a]);
}

/** Resident memory of a process in bytes. */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

/** Asserts that each line the server wrote is one JSON-RPC message. */
function assertJsonRpcLines(text: string, where: string): number {
  let n = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let message: { jsonrpc?: unknown };
    try {
      message = JSON.parse(line);
    } catch {
      assert.fail(`${where}: the server wrote a line that is not JSON: ${line.slice(0, 200)}`);
    }
    assert.equal(message.jsonrpc, '2.0', `${where}: not a JSON-RPC message: ${line.slice(0, 200)}`);
    n++;
  }
  return n;
}

describe('fuzzing the MCP transports', () => {
  let project: TempProject;
  let serve: ServeProcess;
  let serverPid: number;
  let rssBefore: number;

  before(async () => {
    project = tempProject('computer:\n  defaultProfile: shell\n  autoLaunch: false\n');
    serve = await startServe(project);
    serverPid = JSON.parse(readFileSync(join(project.dataDir, 'run', 'server.json'), 'utf8')).pid;
    // a first client warms the server so the memory figure compares like with like
    const client = await connectHttp(serve.url, serve.token);
    await client.listTools();
    await client.close();
    rssBefore = rss(serverPid);
  });

  after(async () => {
    await serve?.stop();
    project?.cleanup();
  });

  it('answers every mutated stdio line without crashing, and the session still answers a ping after each batch', async (t) => {
    t.diagnostic(`seed ${SEED}, ${MESSAGES} messages (replay with FUZZ_SEED=${SEED})`);
    const rnd = random(SEED);
    const seeds = corpus();
    const bridge = spawn(process.execPath, [PADDOCK_BIN, 'mcp'], {
      cwd: project.dir,
      env: project.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    bridge.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    bridge.stderr.resume();
    const write = (b: Buffer | string) =>
      new Promise<void>((resolve) =>
        bridge.stdin.write(b) ? resolve() : bridge.stdin.once('drain', resolve),
      );
    try {
      await write(`${JSON.stringify(seeds[0])}\n${JSON.stringify(seeds[1])}\n`);
      for (let sent = 0, batch = 0; sent < MESSAGES; batch++) {
        for (let i = 0; i < BATCH && sent < MESSAGES; i++, sent++) {
          // a mutation may add a newline: that is two messages, both fuzz
          await write(Buffer.concat([fuzzedLine(rnd, seeds), Buffer.from('\n')]));
        }
        const id = `alive-${batch}`;
        await write(`${JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' })}\n`);
        await pollUntil(
          () => out.includes(`"id":"${id}"`),
          `the ping after batch ${batch} (seed ${SEED}, message ${sent})`,
          120_000,
        );
        assert.equal(bridge.exitCode, null, `the bridge exited after message ${sent} (seed ${SEED})`);
      }
      const lines = assertJsonRpcLines(out, 'stdio');
      t.diagnostic(`${lines} replies`);
      bridge.stdin.end();
      assert.equal(await new Promise((r) => bridge.once('exit', r)), 0);
    } finally {
      bridge.kill('SIGKILL');
    }
  });

  it('answers every mutated HTTP request with a JSON-RPC message or an HTTP error, and the session carries on', async (t) => {
    const seed = SEED + 1;
    t.diagnostic(`seed ${seed}, ${MESSAGES} messages (replay with FUZZ_SEED=${SEED})`);
    const rnd = random(seed);
    const seeds = corpus();
    const endpoint = `${serve.url}/mcp`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${serve.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const init = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify(seeds[0]) });
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id');
    assert.ok(session, 'the server names the session');
    await init.text();
    const sessionHeaders = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await (
      await fetch(endpoint, { method: 'POST', headers: sessionHeaders, body: JSON.stringify(seeds[1]) })
    ).text();
    const statuses = new Map<number, number>();
    for (let sent = 0; sent < MESSAGES; sent++) {
      const body = fuzzedLine(rnd, seeds);
      // now and then the request itself is odd: no session, a forged session, no accept header
      const odd = rnd();
      const h =
        odd < 0.05
          ? headers
          : odd < 0.1
            ? { ...sessionHeaders, 'mcp-session-id': `${session}x` }
            : odd < 0.15
              ? { ...sessionHeaders, accept: 'text/html' }
              : sessionHeaders;
      const res = await fetch(endpoint, { method: 'POST', headers: h, body });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      assert.ok(res.status < 500, `message ${sent} (seed ${seed}) got ${res.status}: ${text.slice(0, 300)}`);
      if (res.status === 200 && (res.headers.get('content-type') ?? '').includes('application/json'))
        JSON.parse(text);
      if (sent % BATCH === BATCH - 1) {
        const ping = await fetch(endpoint, {
          method: 'POST',
          headers: sessionHeaders,
          body: JSON.stringify({ jsonrpc: '2.0', id: `alive-${sent}`, method: 'ping' }),
        });
        assert.equal(ping.status, 200, `the session stopped answering after message ${sent} (seed ${seed})`);
        await ping.text();
      }
    }
    t.diagnostic(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
  });

  it('leaves a server that fresh clients use as before, with bounded memory', async (t) => {
    const http = await connectHttp(serve.url, serve.token);
    const stdio = await connectStdio(project);
    try {
      for (const client of [http, stdio]) {
        const { tools } = await client.listTools();
        assert.ok(tools.some((tool) => tool.name === 'get_computer_status'));
        const status = await client.callTool({ name: 'get_computer_status', arguments: {} });
        assert.notEqual(status.isError, true);
      }
    } finally {
      await http.close();
      await stdio.close();
    }
    const grown = rss(serverPid) - rssBefore;
    t.diagnostic(`server RSS grew by ${Math.round(grown / 2 ** 20)} MiB`);
    assert.ok(grown < 512 * 2 ** 20, `the server grew by ${Math.round(grown / 2 ** 20)} MiB while fuzzed`);
  });
});
