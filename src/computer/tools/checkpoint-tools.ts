/**
 * checkpoint_computer, list_checkpoints, restore_checkpoint: checkpoints of the computer's
 * /workspace (checkpoints/store.ts). A restore relaunches the computer as a new generation whose
 * /workspace is the checkpoint's, after checkpointing the state it leaves, so a restore is undone
 * by restoring that one.
 */
import { existsSync } from 'node:fs';
import { PaddockError } from '../../shared/errors.js';
import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import type { ComputerSource } from '../manager.js';
import { computerTool, inputObject, requestIdProperty, structured } from './common.js';

/** The checkpoint tools of the computer tool set, over `computers`' checkpoint store. */
export function checkpointTools(computers: ComputerSource): Tool[] {
  return [
    computerTool(computers, {
      name: 'checkpoint_computer',
      idempotent: true,
      title: 'Checkpoint the computer',
      kind: 'act',
      description:
        "Saves the computer's /workspace as it is now (files, modes, owners, links, empty directories) so restore_checkpoint can bring it back later. " +
        'Take one before risky work (a migration, a large refactor, deleting files); only files changed since the previous checkpoint are stored again. ' +
        'Processes are not saved, only files. The oldest checkpoints are removed when the retention limits are reached.',
      input: inputObject(
        {
          label: s.string({
            description: 'Optional short note saying what state this is, e.g. "before the upgrade".',
            maxLength: 200,
          }),
          requestId: requestIdProperty,
        },
        [],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const c = await manager.requireRunning(ctx.signal);
        if (c.profile.backend === 'browser' || !existsSync(c.hostWorkspace)) {
          throw new PaddockError(
            'UNSUPPORTED_CAPABILITY',
            'This computer has no /workspace the server can checkpoint (browser computers keep their files in the tab); launch a server profile for checkpoints.',
          );
        }
        const { store, key } = manager.checkpoints;
        const info = await store.create(key, c.hostWorkspace, {
          ...(input.label ? { label: input.label } : {}),
          signal: ctx.signal,
        });
        manager.log.add(
          'info',
          'computer.checkpoint',
          `Checkpoint ${info.id} taken of /workspace (${info.files} files).`,
          { generation: c.generation },
        );
        const { id, ...rest } = info;
        return structured({ checkpointId: id, generation: c.generation, ...rest });
      },
    }),
    computerTool(computers, {
      name: 'list_checkpoints',
      title: 'List checkpoints',
      kind: 'answer',
      description:
        "Lists the computer's checkpoints, newest first: id, label, time, bytes it added to disk, files and bytes it holds. " +
        'Pass an id to restore_checkpoint to bring that state back. Continue with nextCursor while it is not null.',
      input: inputObject(
        {
          cursor: s.string({
            description: 'nextCursor of the previous page; omit for the newest.',
            maxLength: 200,
          }),
          limit: s.integer({
            description: 'Most checkpoints to return; default 20, maximum 100.',
            minimum: 1,
            maximum: 100,
          }),
        },
        [],
      ),
      async execute(input, ctx) {
        const { store, key } = computers.for(ctx.caller).checkpoints;
        const all = await store.list(key);
        const start = input.cursor ? all.findIndex((c) => c.id === input.cursor) + 1 : 0;
        if (input.cursor && start === 0) {
          throw new PaddockError(
            'NOT_FOUND',
            'That cursor names no checkpoint any more (retention removed it); list again without a cursor.',
          );
        }
        const limit = input.limit ?? 20;
        const page = all.slice(start, start + limit);
        const more = start + limit < all.length;
        return structured({ checkpoints: page, nextCursor: more ? (page.at(-1)?.id ?? null) : null });
      },
    }),
    computerTool(computers, {
      name: 'restore_checkpoint',
      idempotent: true,
      title: 'Restore a checkpoint',
      kind: 'transact',
      description:
        'Brings the /workspace of a checkpoint back by relaunching the computer as a new generation: every process of the current one is killed and its job and terminal ids stop working, as after launch_computer. ' +
        'The state it leaves is checkpointed first (savedAs in the answer), so a restore can itself be undone. ' +
        'Poll get_computer_status until lifecycle is running before using other tools. An unknown id answers NOT_FOUND; list_checkpoints shows the ids.',
      input: inputObject(
        {
          checkpointId: s.string({
            description: 'An id from list_checkpoints or checkpoint_computer.',
            maxLength: 100,
          }),
          requestId: requestIdProperty,
        },
        ['checkpointId'],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const { store, key } = manager.checkpoints;
        const target = await store.get(key, input.checkpointId);
        const c = await manager.requireRunning(ctx.signal);
        if (manager.workspaceKept(c.profile.id)) {
          throw new PaddockError(
            'UNSUPPORTED_CAPABILITY',
            'This computer keeps its /workspace across launches, and restoring into a kept workspace is not supported yet; take the files you need from a fork-free copy, or use a computer with a fresh workspace.',
          );
        }
        const saved = await store.create(key, c.hostWorkspace, {
          label: `before restoring ${target.id}`,
          keep: [target.id],
          signal: ctx.signal,
        });
        const launched = manager.launch(c.profile.id, undefined, {
          seedWorkspace: (dir) => store.restore(key, target.id, dir),
        });
        manager.log.add(
          'info',
          'computer.restore',
          `Restoring checkpoint ${target.id}; the state left was saved as ${saved.id}.`,
          { generation: launched.generation },
        );
        return structured({
          ...launched,
          checkpointId: target.id,
          savedAs: saved.id,
          message: `Generation ${launched.generation} boots with the /workspace of checkpoint ${target.id}; the state left was saved as checkpoint ${saved.id}. Poll get_computer_status until lifecycle is running.`,
        });
      },
    }),
  ];
}
