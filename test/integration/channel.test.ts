import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { createPaddock, type Paddock } from '../../src/main.js';
import { silentLogger } from '../../src/shared/logger.js';
import { OWNER } from '../../src/shared/principal.js';
import type { CallerContext } from '../../src/tools/tool.js';
import { pollUntil } from '../helpers/poll.js';

const caller: CallerContext = { principal: OWNER, caller: 'mcp:channel-test', via: 'direct', attended: true };

interface JobOut {
  jobId: string;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  toolCalls: number;
  terminationObserved: boolean;
}

describe('tool channel: commands in the computer call the caller’s tools', () => {
  let dir: string;
  let paddock: Paddock;

  async function run(
    script: string,
    extra: Record<string, unknown> = {},
  ): Promise<JobOut & { invocationId: string }> {
    const outcome = await paddock.gateway.call(
      'run_command',
      { script, waitMs: 10_000, timeoutMs: 60_000, ...extra },
      caller,
    );
    if (!outcome.ok) throw new Error(`run_command failed: ${JSON.stringify(outcome.error.toJSON())}`);
    const job = { ...(outcome.result.structured as unknown as JobOut & { nextCursor: string }) };
    // A slow machine may need longer than run_command's wait: read on by cursor until the job ends.
    let cursor = job.nextCursor;
    await pollUntil(
      async () => {
        if (job.terminationObserved) return true;
        const read = await paddock.gateway.call(
          'read_job',
          { jobId: job.jobId, cursor, byteLimit: 65536 },
          caller,
        );
        if (!read.ok) throw new Error(`read_job failed: ${JSON.stringify(read.error.toJSON())}`);
        const part = read.result.structured as unknown as JobOut & { nextCursor: string };
        job.stdout += part.stdout;
        job.stderr += part.stderr;
        job.exitCode = part.exitCode;
        job.toolCalls = part.toolCalls;
        job.terminationObserved = part.terminationObserved;
        cursor = part.nextCursor;
        return false;
      },
      `job ${job.jobId} to end`,
      90_000,
      50,
    );
    return { ...job, invocationId: outcome.invocationId };
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-channel-'));
    writeFileSync(
      join(dir, 'paddock.yaml'),
      'permissions:\n  notify: ask\ncomputer:\n  defaultProfile: python\n',
    );
    const loaded = loadConfig({ cwd: dir, env: { PADDOCK_DATA: join(dir, 'data') } });
    paddock = await createPaddock(loaded, { logger: silentLogger() });
    const launched = await paddock.gateway.call('launch_computer', { profileId: 'python' }, caller);
    assert.ok(launched.ok);
    for (let i = 0; i < 200; i++) {
      const s = await paddock.gateway.call('get_computer_status', {}, caller);
      if (s.ok && (s.result.structured as { lifecycle: string }).lifecycle === 'running') break;
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  after(async () => {
    await paddock?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs a shell script that reads with one tool, branches with jq, and writes with another', async () => {
    const job = await run(`
      set -e
      n=$(paddock-tool call recall_memory '{"query":"release"}' | jq '.memories | length')
      if [ "$n" -eq 0 ]; then
        paddock-tool call save_memory '{"content":"first release note","tags":["release"]}' | jq -r .id
      fi
      paddock-tool call recall_memory '{"query":"release"}' | jq -r '.memories[0].content'
    `);
    assert.equal(job.exitCode, 0, job.stderr);
    assert.match(job.stdout, /first release note/);
    assert.equal(job.toolCalls, 3);
    assert.equal(job.stderr, '', 'frames must not show in stderr');
    const direct = await paddock.gateway.call('recall_memory', { query: 'release' }, caller);
    assert.ok(direct.ok);
    assert.match(
      JSON.stringify(direct.result.structured),
      /first release note/,
      'channel calls act for the caller',
    );
    const rows = await paddock.audit.query({ parentId: job.invocationId, ascending: true });
    assert.deepEqual(
      rows.map((r) => [r.tool, r.via, r.caller, r.jobId]),
      [
        ['recall_memory', 'channel', `channel:${job.jobId}`, job.jobId],
        ['save_memory', 'channel', `channel:${job.jobId}`, job.jobId],
        ['recall_memory', 'channel', `channel:${job.jobId}`, job.jobId],
      ],
    );
  });

  it('does the same job from Python with paddock_tool and raises ToolError on failure', async () => {
    const job = await run(`python3 - <<'PY'
import paddock_tool
found = paddock_tool.call_tool("recall_memory", {"query": "python-note"})
if not found["memories"]:
    paddock_tool.call_tool("save_memory", {"content": "python-note saved", "tags": ["py"]})
print(paddock_tool.call_tool("recall_memory", {"query": "python-note"})["memories"][0]["content"])
try:
    paddock_tool.call_tool("save_memory", {"nope": 1})
except paddock_tool.ToolError as e:
    print("error", e.code)
print(len(paddock_tool.list_tools()) > 0)
PY`);
    assert.equal(job.exitCode, 0, job.stderr);
    assert.match(job.stdout, /python-note saved/);
    assert.match(job.stdout, /error INVALID_ARGUMENT/);
    assert.match(job.stdout, /True/);
  });

  it('does the same job from Node with require and import of paddock-tool', async () => {
    const job = await run(`cat > /tmp/t.mjs <<'JS'
import { callTool, listTools, ToolError } from 'paddock-tool';
const cjs = (await import('node:module')).createRequire(import.meta.url)('paddock-tool');
const found = await callTool('recall_memory', { query: 'node-note' });
if (found.memories.length === 0) await cjs.callTool('save_memory', { content: 'node-note saved' });
console.log((await callTool('recall_memory', { query: 'node-note' })).memories[0].content);
try { await callTool('no_such_tool', {}); } catch (e) { console.log('error', e instanceof ToolError, e.code); }
console.log((await listTools()).some((t) => t.name === 'save_memory'));
JS
node /tmp/t.mjs`);
    assert.equal(job.exitCode, 0, job.stderr);
    assert.match(job.stdout, /node-note saved/);
    assert.match(job.stdout, /error true NOT_FOUND/);
    assert.equal(job.stdout.trim().split('\n').at(-1), 'true', 'listTools offers save_memory');
  });

  it('allows 100 calls per command and fails the 101st with LIMIT_EXCEEDED', async () => {
    const job = await run(`python3 - <<'PY'
import paddock_tool
ok = 0
for i in range(101):
    try:
        paddock_tool.call_tool("recall_memory", {"query": "x", "limit": 1})
        ok += 1
    except paddock_tool.ToolError as e:
        print("failed", i, e.code)
print("ok", ok)
PY`);
    assert.match(job.stdout, /failed 100 LIMIT_EXCEEDED/);
    assert.match(job.stdout, /ok 100/);
    assert.equal(job.toolCalls, 100);
  });

  it('refuses every request past 1,000 frames in one command, lists included', async () => {
    const job = await run(`python3 - <<'PY'
import paddock_tool
for i in range(1000):
    paddock_tool.list_tools()
try:
    paddock_tool.list_tools()
    print("1001st answered")
except paddock_tool.ToolError as e:
    print("1001st", e.code)
PY`);
    assert.equal(job.exitCode, 0, job.stderr);
    assert.match(job.stdout, /1001st LIMIT_EXCEEDED/);
  });

  it('gives a channel client no descriptor beyond 0, 1 and 2 besides its own', async () => {
    const job = await run(
      `python3 -c "import os, paddock_tool; paddock_tool.list_tools(); print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"`,
    );
    // 3 is the listing's own descriptor
    assert.equal(job.stdout.trim(), '[0, 1, 2, 3]', job.stderr);
  });

  it('lets exactly 100 of 200 concurrent calls from 8 clients through', async () => {
    const job = await run(`
      for c in 1 2 3 4 5 6 7 8; do
        ( for i in $(seq 25); do paddock-tool call recall_memory '{"query":"y","limit":1}' >/dev/null && echo ok || echo fail; done ) > /tmp/res.$c &
      done
      wait
      cat /tmp/res.* | sort | uniq -c
    `);
    assert.match(job.stdout, /\b100 ok\b/);
    assert.match(job.stdout, /\b100 fail\b/);
  });

  it('fails at once with the redirect advice when stderr is redirected', async () => {
    const job = await run(
      `sh -c 'paddock-tool call recall_memory "{}" 2>/dev/null; echo "exit=$?"'; paddock-tool call recall_memory '{}' 2>/tmp/err >/dev/null; cat /tmp/err`,
    );
    assert.match(job.stdout, /exit=3/);
    assert.match(job.stdout, /Redirect stdout instead/);
    assert.equal(job.toolCalls, 0);
  });

  it('answers CHANNEL_CLOSED at once to a background process that calls after the command exited', async () => {
    // the background process keeps the job's stderr (the channel) and waits for the test's go
    const job = await run(`(until [ -e /workspace/go ]; do sleep 0.05; done
paddock-tool call recall_memory '{}'; echo "bg-exit=$?" > /workspace/bg.txt) &
echo started`);
    assert.match(job.stdout, /started/);
    await run('touch /workspace/go');
    let text = '';
    for (let i = 0; i < 200 && !text.includes('bg-exit'); i++) {
      await new Promise((r) => setTimeout(r, 50));
      text = (await run('cat /workspace/bg.txt 2>/dev/null || true')).stdout;
    }
    assert.match(text, /bg-exit=3/);
    const read = await paddock.gateway.call('read_job', { jobId: job.jobId }, caller);
    assert.ok(read.ok);
    assert.match((read.result.structured as { stderr: string }).stderr, /CHANNEL_CLOSED/);
    assert.equal(
      (await paddock.audit.query({ parentId: job.invocationId })).length,
      0,
      'no tool may run for a closed channel',
    );
  });

  it('leaves no reply FIFO behind after calls from the shell, Python and Node clients', async () => {
    const job = await run(
      [
        `paddock-tool call save_memory '  {"content":"sh client"}\n' >/dev/null`,
        `python3 -c 'import paddock_tool; paddock_tool.call_tool("save_memory", {"content": "py client"})'`,
        `node -e 'require("paddock-tool").callTool("save_memory", {content: "node client"}).then(() => {})'`,
        'ls -A "$PADDOCK_CHANNEL_DIR"',
        // the sh client's pool: every claimed FIFO (c-NAME) is gone; unclaimed spares may stay
        `for c in "$PADDOCK_CHANNEL_DIR-sh"/c-*; do echo claimed; if [ -e "$PADDOCK_CHANNEL_DIR-sh/f-\${c##*/c-}" ]; then echo "left: $c"; fi; done`,
      ].join('; '),
    );
    assert.equal(job.exitCode, 0, job.stderr);
    assert.equal(job.toolCalls, 3);
    assert.equal(
      job.stdout,
      'stderr\nclaimed\n',
      'only the file naming the stderr is left, and the sh call left no FIFO',
    );
  });

  it('treats a frame with a wrong nonce, or a replayed frame, as ordinary output and runs no tool', async () => {
    const frame = (nonce: string) =>
      `\\033_paddock;${nonce};r1;${Buffer.from(JSON.stringify({ v: 1, op: 'call', name: 'save_memory', args: { content: 'forged' } })).toString('base64url')}\\033\\\\`;
    const first = await run(
      `printf '${frame('wrongnonce123')}' >&2; echo "$PADDOCK_CHANNEL" > /workspace/old-nonce`,
    );
    assert.match(first.stderr, /paddock;wrongnonce123;r1;/);
    const old = (await run('cat /workspace/old-nonce')).stdout.trim();
    assert.match(old, /^[A-Za-z0-9_-]{8,}$/, 'the earlier command had a nonce');
    const replay = await run(`printf '${frame(old)}' > /workspace/captured; cat /workspace/captured >&2`);
    assert.match(replay.stderr, new RegExp(`paddock;${old};r1;`));
    assert.equal((await paddock.audit.query({ parentId: first.invocationId })).length, 0);
    assert.equal((await paddock.audit.query({ parentId: replay.invocationId })).length, 0);
    assert.equal(replay.toolCalls, 0);
  });

  it('neither lists nor runs an ask tool, and never offers the computer tools', async () => {
    const job = await run(
      `paddock-tool list | jq -r '.[].name' | sort | tr '\\n' ' '; echo; paddock-tool call notify '{"channel":"x","message":"m"}'; echo "exit=$?"`,
    );
    assert.doesNotMatch(job.stdout, /\bnotify\b.*\n/);
    assert.doesNotMatch(job.stdout, /run_command|read_file|shell/);
    assert.match(job.stdout, /save_memory/);
    assert.match(job.stdout, /exit=1/);
    assert.match(job.stderr, /NOT_FOUND|PERMISSION_REQUIRED/);
  });

  it('answers malformed and oversized frames with their own errors and keeps the server healthy', async () => {
    const job = await run(`python3 - <<'PY'
import base64, json, os, sys
nonce, d = os.environ["PADDOCK_CHANNEL"], os.environ["PADDOCK_CHANNEL_DIR"]
def ask(rid, payload):
    fifo = os.path.join(d, rid)
    os.mkfifo(fifo)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK); w = os.open(fifo, os.O_WRONLY)
    os.write(2, b"\\x1b_paddock;" + nonce.encode() + b";" + rid.encode() + b";" + payload + b"\\x1b\\\\")
    import select; data = b""
    while b"\\n" not in data:
        select.select([r], [], [], 10); data += os.read(r, 65536)
    os.close(r); os.close(w); os.path.exists(fifo) and os.unlink(fifo)  # the guest removes it when it replies
    print(rid, json.loads(data)["error"]["code"])
ask("bad1", base64.urlsafe_b64encode(b"not json").rstrip(b"="))
ask("bad2", base64.urlsafe_b64encode(json.dumps({"v": 1, "op": "explode"}).encode()).rstrip(b"="))
ask("big1", b"A" * (1024 * 1024 + 10))
ask("bad1", base64.urlsafe_b64encode(json.dumps({"v": 1, "op": "list"}).encode()).rstrip(b"="))
PY
code=$?
echo ordinary-stderr >&2
exit $code`);
    assert.equal(job.exitCode, 0, job.stderr);
    assert.match(job.stdout, /bad1 INVALID_ARGUMENT/);
    assert.match(job.stdout, /bad2 INVALID_ARGUMENT/);
    assert.match(job.stdout, /big1 LIMIT_EXCEEDED/);
    assert.equal((job.stdout.match(/bad1 INVALID_ARGUMENT/g) ?? []).length, 2, 'a duplicate id is refused');
    assert.match(job.stderr, /ordinary-stderr/);
    const status = await paddock.gateway.call('get_computer_status', {}, caller);
    assert.ok(status.ok);
  });
});
