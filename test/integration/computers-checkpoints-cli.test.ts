/**
 * `paddock computers checkpoints | restore | fork | prune` against a real server, its real
 * sandboxes and MCP sessions attached to named computers over HTTP.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { callOk, connectHttp } from '../helpers/clients.js';
import { runCli, startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

const CONFIG = `computer:
  defaultProfile: shell
`;

interface Listed {
  id: string;
  label: string | null;
  trigger: string;
  files: number;
  addedBytes: number;
}

async function cli(project: ReturnType<typeof tempProject>, args: string[]) {
  const r = await runCli(project, args);
  assert.equal(r.code, 0, `paddock ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function checkpoints(project: ReturnType<typeof tempProject>, name: string): Promise<Listed[]> {
  return JSON.parse(await cli(project, ['computers', 'checkpoints', name, '--json'])).checkpoints;
}

/** The text of /workspace/note.txt once the computer runs (polled: a restore relaunches it). */
async function noteOf(client: Client): Promise<string> {
  let seen = '';
  await pollUntil(
    async () => {
      const r = await client.callTool({
        name: 'run_command',
        arguments: { script: 'cat /workspace/note.txt', waitMs: 10_000 },
      });
      if (r.isError) return false;
      const s = r.structuredContent as { exitCode: number | null; stdout: string };
      seen = s.stdout;
      return s.exitCode === 0;
    },
    'the computer to run and read its note',
    30_000,
  );
  return seen;
}

describe('paddock computers checkpoints, restore, fork, prune', () => {
  it('lists a named computer’s checkpoints, restores one as an audited operator call, forks one beside it and prunes to the newest', async () => {
    const project = tempProject(CONFIG);
    const serve = await startServe(project);
    const box = await connectHttp(serve.url, serve.token, 'box', { computer: 'box' });
    let twin: Client | null = null;
    try {
      await callOk(box, 'run_command', { script: 'echo one > /workspace/note.txt', waitMs: 10_000 });
      const first = await callOk(box, 'checkpoint_computer', { label: 'one \u001b[31mred' });
      await callOk(box, 'run_command', { script: 'echo two > /workspace/note.txt', waitMs: 10_000 });
      const second = await callOk(box, 'checkpoint_computer', {});

      const listed = await checkpoints(project, 'box');
      assert.deepEqual(
        listed.map((c) => c.id),
        [second.checkpointId, first.checkpointId],
      );
      assert.equal(listed[1]?.trigger, 'manual');
      const table = await cli(project, ['computers', 'checkpoints', 'box']);
      assert.match(
        table,
        new RegExp(`${String(first.checkpointId)}\\s+\\d{4}-\\d\\d-\\d\\d \\S+ manual: one`),
      );
      assert.doesNotMatch(table, /\u001b/, 'an agent’s label cannot write control sequences to the terminal');

      const restored = await cli(project, ['computers', 'restore', 'box', String(first.checkpointId)]);
      const savedAs = /checkpoint (ck_\S+); `paddock computers restore box/.exec(restored)?.[1];
      assert.ok(savedAs, restored);
      assert.equal(await noteOf(box), 'one\n');
      // the restore is a tool call of the operator, in the audit trail like any other
      const audit = await cli(project, ['audit', '--tool', 'restore_checkpoint', '--json']);
      const row = audit
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { caller: string; success: boolean; input: string });
      assert.equal(row.length, 1, audit);
      assert.equal(row[0]?.caller, 'cli');
      assert.equal(row[0]?.success, true);
      assert.match(row[0]?.input ?? '', new RegExp(String(first.checkpointId)));

      const forked = JSON.parse(
        await cli(project, ['computers', 'fork', 'box', String(second.checkpointId), 'twin', '--json']),
      ) as { name: string; checkpointId: string };
      assert.equal(forked.name, 'twin');
      twin = await connectHttp(serve.url, serve.token, 'twin', { computer: 'twin' });
      assert.equal(await noteOf(twin), 'two\n');
      await callOk(twin, 'run_command', { script: 'echo three > /workspace/note.txt', waitMs: 10_000 });
      assert.equal(await noteOf(box), 'one\n', 'the fork diverges without touching its origin');

      const pruned = JSON.parse(
        await cli(project, ['computers', 'prune', 'box', '--keep', '1', '--json']),
      ) as {
        removed: string[];
        remaining: number;
      };
      assert.equal(pruned.remaining, 1);
      assert.deepEqual(
        (await checkpoints(project, 'box')).map((c) => c.id),
        [savedAs],
        'the newest stays, the older ones go',
      );
      const all = await cli(project, ['computers', 'prune', 'box', '--all']);
      assert.match(all, /1 checkpoint\(s\) removed, \d+(\.\d)? (B|KiB) freed; 0 left/);
      assert.deepEqual(await checkpoints(project, 'box'), []);
    } finally {
      await box.close().catch(() => undefined);
      await twin?.close().catch(() => undefined);
      await serve.stop();
    }
    try {
      // no server: a named computer's checkpoints are still on disk (twin's, taken as it stopped)
      const offline = JSON.parse(await cli(project, ['computers', 'checkpoints', 'twin', '--json']));
      assert.equal(offline.serverRunning, false);
      assert.ok(
        (offline.checkpoints as Listed[]).some((c) => c.trigger === 'stop'),
        JSON.stringify(offline),
      );
      const restore = await runCli(project, ['computers', 'restore', 'twin', offline.checkpoints[0].id]);
      assert.notEqual(restore.code, 0);
      assert.match(restore.stderr, /No Paddock server runs .* start it with `paddock serve`/);
    } finally {
      project.cleanup();
    }
  });

  it('answers an unknown computer, an unknown checkpoint and a bad prune with what to do next', async () => {
    const project = tempProject(CONFIG);
    const serve = await startServe(project);
    const box = await connectHttp(serve.url, serve.token, 'box', { computer: 'box' });
    try {
      await callOk(box, 'checkpoint_computer', {});
      const cases: [string[], RegExp][] = [
        [['computers', 'checkpoints', 'nosuch'], /No computer "nosuch" here.*paddock computers list/],
        [['computers', 'checkpoints', '../../etc'], /not a valid computer name/],
        [
          ['computers', 'restore', 'box', 'ck_000000000AAAAAAAAAAA'],
          /has no checkpoint ck_000000000AAAAAAAAAAA; `paddock computers checkpoints box` lists/,
        ],
        [['computers', 'fork', 'box', '../x', 'twin'], /has no checkpoint/],
        [['computers', 'restore', 'nosuch', 'ck_000000000AAAAAAAAAAA'], /No computer "nosuch" here/],
        [['computers', 'prune', 'box', '--keep', '0'], /--all instead/],
        [['computers', 'prune', 'box', '--keep', '2', '--all'], /either --keep N or --all/],
        [['computers', 'restore', 'box'], /Usage: paddock computers restore NAME ID/],
      ];
      for (const [args, message] of cases) {
        const r = await runCli(project, args);
        assert.notEqual(r.code, 0, `${args.join(' ')} fails`);
        assert.match(r.stderr, message, args.join(' '));
      }
      assert.equal((await checkpoints(project, 'box')).length, 1, 'nothing was dropped by a refused prune');
    } finally {
      await box.close().catch(() => undefined);
      await serve.stop();
      project.cleanup();
    }
  });
});
