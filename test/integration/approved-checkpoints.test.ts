/**
 * The checkpoint before a call a person approved, end to end: a real `paddock serve` (on SQLite,
 * then on a throwaway PostgreSQL cluster), a real bwrap computer, approvals decided with
 * `paddock approvals`, and the audit read back with `paddock audit`. An approved
 * `rm -rf /workspace/project` is undone from the checkpoint its audit row and its approval name;
 * a refused call takes none.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { WebSocket } from 'ws';
import { callOk, connectHttp } from '../helpers/clients.js';
import { dockCookie } from '../helpers/oauth.js';
import {
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import { type PgCluster, startPostgres } from '../helpers/postgres.js';

const CONFIG = `permissions:
  run_command: ask
approvals:
  mcp: gateway
computer:
  defaultProfile: shell
`;

/**
 * Every path under `dir` with its type, mode, size and, for a file, the SHA-256 of its bytes,
 * read with the computer's read-only tools (one line each, sorted); '' when `dir` is missing.
 */
async function tree(client: Client, dir: string): Promise<string> {
  const listed = await client.callTool({ name: 'list_files', arguments: { path: dir, limit: 500 } });
  if (listed.isError) return '';
  const lines: string[] = [];
  for (const e of (listed.structuredContent as { entries: FileEntryJson[] }).entries) {
    let digest = '';
    if (e.type === 'file') {
      const hash = createHash('sha256');
      for (let offset = 0, eof = false; !eof; ) {
        const r = await callOk(client, 'read_file', {
          path: e.path,
          encoding: 'base64',
          offset,
          byteLimit: 65536,
        });
        hash.update(Buffer.from(String(r.content), 'base64'));
        offset = Number(r.nextOffset);
        eof = r.eof === true;
      }
      digest = hash.digest('hex');
    }
    lines.push(`${e.path} ${e.type} ${e.mode} ${e.type === 'dir' ? '' : e.size} ${digest}`);
    if (e.type === 'dir') lines.push(await tree(client, e.path));
  }
  return lines.filter(Boolean).sort().join('\n');
}

interface FileEntryJson {
  path: string;
  type: string;
  size: number;
  mode: string;
}

interface AuditJson {
  id: string;
  tool: string;
  success: boolean;
  errorCode: string | null;
  approvalId: string | null;
  checkpointId?: string | null;
  input: string;
}

interface ApprovalJson {
  id: string;
  invocationId: string;
  status: string;
  arguments: string;
  checkpointId: string | null;
}

interface CheckpointJson {
  id: string;
  trigger: string;
  before: { invocationId: string; tool: string; approvalId: string | null } | null;
}

async function cli(project: TempProject, args: string[]): Promise<string> {
  const r = await runCli(project, args);
  assert.equal(r.code, 0, `paddock ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The audit row of the run_command whose script holds `marker`. */
async function auditRow(project: TempProject, marker: string): Promise<AuditJson> {
  const rows = (await cli(project, ['audit', '--tool', 'run_command', '--json']))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditJson);
  const row = rows.find((r) => r.input.includes(marker));
  assert.ok(row, `an audit row for ${marker}`);
  return row;
}

async function pendingApproval(project: TempProject, marker: string): Promise<ApprovalJson> {
  return pollUntil(
    async () => {
      const list = JSON.parse(
        (await cli(project, ['approvals', 'list', '--json'])) || '[]',
      ) as ApprovalJson[];
      return list.find((a) => a.arguments.includes(marker) && a.status === 'pending');
    },
    `a pending approval for ${marker}`,
    30_000,
    100,
  );
}

async function approval(project: TempProject, id: string): Promise<ApprovalJson> {
  return JSON.parse(await cli(project, ['approvals', 'show', id, '--json'])) as ApprovalJson;
}

/** Calls run_command with `script` and lets a person decide it with `paddock approvals`. */
async function decided(
  client: Client,
  project: TempProject,
  script: string,
  marker: string,
  decision: 'approve' | 'deny',
): Promise<{
  result: { isError?: boolean; structuredContent?: unknown; content?: unknown };
  approvalId: string;
}> {
  const call = client.callTool({ name: 'run_command', arguments: { script, waitMs: 10_000 } });
  const pending = await pendingApproval(project, marker);
  await cli(project, ['approvals', decision, pending.id]);
  return { result: (await call) as never, approvalId: pending.id };
}

/** The audit rows of the dock's first snapshot, as the page receives them. */
function dockAuditRows(url: string, cookie: string): Promise<{ id: string; checkpointId?: string | null }[]> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http://', 'ws://')}/dock/ws`, {
      headers: { cookie, origin: url },
    });
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`the dock refused: ${res.statusCode}`)));
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { type: string; audit?: { id: string }[] };
      if (message.type !== 'snapshot') return;
      ws.terminate();
      resolve(message.audit ?? []);
    });
  });
}

async function checkpoints(client: Client): Promise<CheckpointJson[]> {
  return (await callOk(client, 'list_checkpoints', { limit: 100 })).checkpoints as CheckpointJson[];
}

async function running(client: Client): Promise<void> {
  await pollUntil(
    async () => (await callOk(client, 'get_computer_status', {})).lifecycle === 'running',
    'the computer to run',
    60_000,
    200,
  );
}

function suite(kind: string, configure: () => Promise<{ yaml: string; env: NodeJS.ProcessEnv }>): void {
  describe(`a checkpoint before every approved call (${kind})`, { concurrency: false }, () => {
    let project: TempProject;
    let serve: ServeProcess;
    let client: Client;

    before(async () => {
      const { yaml, env } = await configure();
      project = tempProject(`${CONFIG}${yaml}`);
      Object.assign(project.env, env);
      serve = await startServe(project);
      client = await connectHttp(serve.url, serve.token);
    });
    after(async () => {
      await client?.close().catch(() => {});
      if (process.env.DEBUG_SERVE) process.stderr.write(serve?.stderr() ?? '');
      await serve?.stop();
      project?.cleanup();
    });

    it('an approved call on a computer that does not run yet takes no checkpoint and runs', async () => {
      const { result, approvalId } = await decided(
        client,
        project,
        'mkdir -p /workspace/project/src/empty && cd /workspace/project && echo one > src/a.txt && chmod 640 src/a.txt && ' +
          'ln -s src/a.txt link && head -c 200000 /dev/urandom > blob.bin && echo made-project',
        'made-project',
        'approve',
      );
      assert.notEqual(result.isError, true, JSON.stringify(result.content));
      const row = await auditRow(project, 'made-project');
      assert.equal(row.success, true);
      assert.equal(row.approvalId, approvalId);
      assert.equal(row.checkpointId, null, 'nothing ran before the call, so nothing was checkpointed');
      assert.equal((await approval(project, approvalId)).checkpointId, null);
    });

    it('an approved rm -rf is undone from the checkpoint its audit row and its approval name', async () => {
      await running(client);
      const original = await tree(client, '/workspace/project');
      assert.match(original, /^\/workspace\/project\/src\/a\.txt file 640 4 [0-9a-f]{64}$/m);
      assert.match(original, /^\/workspace\/project\/link symlink /m);
      assert.match(original, /^\/workspace\/project\/src\/empty dir /m);
      assert.match(original, /^\/workspace\/project\/blob\.bin file \d+ 200000 [0-9a-f]{64}$/m);
      const { result, approvalId } = await decided(
        client,
        project,
        'rm -rf /workspace/project && echo removed-project',
        'removed-project',
        'approve',
      );
      assert.notEqual(result.isError, true, JSON.stringify(result.content));
      assert.equal(await tree(client, '/workspace/project'), '', 'the call removed the project');
      const row = await auditRow(project, 'removed-project');
      assert.equal(row.success, true);
      assert.equal(row.approvalId, approvalId);
      assert.match(String(row.checkpointId), /^ck_/, 'the audit row names the checkpoint');
      const record = await approval(project, approvalId);
      assert.equal(record.status, 'approved');
      assert.equal(record.invocationId, row.id);
      assert.equal(record.checkpointId, row.checkpointId, 'the approval names the same checkpoint');

      const taken = (await checkpoints(client)).find((c) => c.id === row.checkpointId);
      assert.ok(taken, 'the named checkpoint is listed');
      assert.equal(taken.trigger, 'approval');
      assert.deepEqual(taken.before, { invocationId: row.id, tool: 'run_command', approvalId });

      const text = await cli(project, ['audit', '--tool', 'run_command']);
      assert.match(
        text,
        new RegExp(`approval ${approvalId} by cli, checkpoint ${row.checkpointId} before it`),
      );
      const shown = await cli(project, ['approvals', 'show', approvalId]);
      assert.match(shown, new RegExp(`Checkpoint: +${row.checkpointId}`));

      const cookie = await dockCookie(serve);
      const history = await (await fetch(`${serve.url}/approvals`, { headers: { cookie } })).text();
      assert.match(
        history,
        new RegExp(
          `data-approval="${approvalId}"[^]*?<td class="checkpoint"><code>${row.checkpointId}</code>`,
        ),
        "the dock's approvals page names the checkpoint",
      );
      const dockRow = (await dockAuditRows(serve.url, cookie)).find((r) => r.id === row.id);
      assert.equal(dockRow?.checkpointId, row.checkpointId, "the dock's audit view is given the checkpoint");

      await callOk(client, 'restore_checkpoint', { checkpointId: row.checkpointId });
      await running(client);
      let seen = '';
      await pollUntil(
        async () => {
          seen = await tree(client, '/workspace/project');
          return seen === original;
        },
        'the files from before the call back in /workspace/project',
        60_000,
        200,
      ).catch((e: Error) => assert.equal(seen, original, e.message));
    });

    it('a call the person refused takes no checkpoint, and its row and approval name none', async () => {
      await running(client);
      const before = (await checkpoints(client)).map((c) => c.id);
      const { result, approvalId } = await decided(
        client,
        project,
        'rm -rf /workspace && echo refused-call',
        'refused-call',
        'deny',
      );
      assert.equal(result.isError, true);
      const row = await auditRow(project, 'refused-call');
      assert.equal(row.success, false);
      assert.equal(row.errorCode, 'PERMISSION_REQUIRED');
      assert.equal(row.approvalId, approvalId);
      assert.equal(row.checkpointId, null);
      assert.equal((await approval(project, approvalId)).checkpointId, null);
      assert.deepEqual(
        (await checkpoints(client)).map((c) => c.id),
        before,
        'no checkpoint was taken for it',
      );
    });

    it('an approved call whose checkpoint cannot be taken is refused, names the cause and changes nothing', async () => {
      await running(client);
      const [computerDir] = readdirSync(join(project.dataDir, 'checkpoints'));
      assert.ok(computerDir, 'the computer has a checkpoint directory');
      const manifests = join(project.dataDir, 'checkpoints', computerDir, 'manifests');
      renameSync(manifests, `${manifests}.aside`);
      writeFileSync(manifests, 'not a directory');
      try {
        const { result, approvalId } = await decided(
          client,
          project,
          'touch /workspace/unguarded && echo unguarded-call',
          'unguarded-call',
          'approve',
        );
        assert.equal(result.isError, true, 'the call is refused');
        const body = JSON.parse((result.content as { text: string }[])[0]!.text) as {
          message: string;
          approvalId: string;
        };
        assert.match(
          body.message,
          /approved but not run: the checkpoint that lets a person undo it could not be taken \(/,
        );
        assert.equal(body.approvalId, approvalId);
        assert.ok(!body.message.includes(project.dataDir), 'host paths stay in the server log');
        assert.match(serve.stderr(), /checkpoint\.before_approved_failed/);
        const row = await auditRow(project, 'unguarded-call');
        assert.equal(row.success, false);
        assert.equal(row.approvalId, approvalId);
        assert.equal(row.checkpointId, null);
        assert.equal((await approval(project, approvalId)).checkpointId, null);
        const missing = await client.callTool({
          name: 'list_files',
          arguments: { path: '/workspace/unguarded' },
        });
        assert.equal(missing.isError, true, 'the command never ran');
      } finally {
        rmSync(manifests);
        renameSync(`${manifests}.aside`, manifests);
      }
    });

    it('the audit chain verifies with rows that name checkpoints and rows that do not', async () => {
      const r = await runCli(project, ['audit', 'verify']);
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    });
  });
}

suite('SQLite', async () => ({ yaml: '', env: {} }));

describe('on PostgreSQL', () => {
  let cluster: PgCluster;
  before(async () => {
    cluster = await startPostgres();
  });
  after(async () => {
    await cluster?.cleanup();
  });
  suite('PostgreSQL', async () => ({
    yaml: `store:\n  url: ${await cluster.createDatabase(`approved_${process.pid}`)}\n`,
    env: { PADDOCK_STORE_PASSWORD: cluster.password },
  }));
});
