/**
 * checkpoint_computer, list_checkpoints, restore_checkpoint, fork_computer: checkpoints of the
 * computer's /workspace (checkpoint-actions.ts over checkpoints/store.ts). A restore relaunches
 * the computer as a new generation whose /workspace is the checkpoint's, after checkpointing the
 * state it leaves, so a restore is undone by restoring that one; a fork boots another named
 * computer from a checkpoint beside this one.
 */
import { PaddockError } from '../../shared/errors.js';
import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import { forkCheckpoint, restoreCheckpoint, takeCheckpoint } from '../checkpoint-actions.js';
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
        "Saves the computer's /workspace as it is now (files, modes, owners, links, empty directories), and on a computer with its own system image everything written over that image too (installed packages, /etc edits, deleted files), so restore_checkpoint can bring it back later. " +
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
        const info = await takeCheckpoint(manager, c, {
          trigger: 'manual',
          ...(input.label ? { label: input.label } : {}),
          signal: ctx.signal,
        });
        const { id, ...rest } = info;
        return structured({ checkpointId: id, ...rest });
      },
    }),
    computerTool(computers, {
      name: 'list_checkpoints',
      title: 'List checkpoints',
      kind: 'answer',
      description:
        "Lists the computer's checkpoints, newest first: id, label, time, bytes it added to disk, files and bytes it holds, what took it (trigger: manual, approval, restore, stop, run_command) and, for an automatic one, the audit row of the call it was taken just before (before.invocationId), and its layers (workspace, and root with the image it lies over). " +
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
        'Brings the /workspace (and root layer, when it has one) of a checkpoint back by relaunching the computer as a new generation: every process of the current one is killed and its job and terminal ids stop working, as after launch_computer. ' +
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
        const restored = await restoreCheckpoint(computers.for(ctx.caller), input.checkpointId, ctx.signal);
        return structured({
          ...restored,
          message: `Generation ${restored.generation} boots with the /workspace of checkpoint ${restored.checkpointId}; the state left was saved as checkpoint ${restored.savedAs}. Poll get_computer_status until lifecycle is running.`,
        });
      },
    }),
    computerTool(computers, {
      name: 'fork_computer',
      idempotent: true,
      title: 'Fork a computer from a checkpoint',
      kind: 'act',
      description:
        'Boots a new named computer whose /workspace is a checkpoint of this one, on the profile the checkpoint was taken of; this computer keeps running untouched, and the two diverge from there. ' +
        'Act on the fork by naming it (the Paddock-Computer header, or _meta of a request); it has its own jobs, terminals and checkpoints. ' +
        'Poll get_computer_status of the fork until lifecycle is running. NOT_FOUND for an unknown checkpoint id, FILE_EXISTS when a computer of that name is running.',
      input: inputObject(
        {
          checkpointId: s.string({
            description: 'An id from list_checkpoints or checkpoint_computer of this computer.',
            maxLength: 100,
          }),
          name: s.string({
            description:
              'Name of the new computer: 1 to 63 lower-case letters, digits and dashes, e.g. "try-upgrade".',
            maxLength: 63,
          }),
          profileId: s.string({
            description: 'Profile to boot the fork on; default: the profile the checkpoint was taken of.',
            maxLength: 100,
          }),
          requestId: requestIdProperty,
        },
        ['checkpointId', 'name'],
      ),
      async execute(input, ctx) {
        const from = computers.for(ctx.caller);
        if (!computers.named) {
          throw new PaddockError(
            'UNSUPPORTED_CAPABILITY',
            'This server runs one computer for every caller, so there is nowhere to fork to; run `paddock serve` for named computers.',
          );
        }
        const to = computers.named(ctx.caller, input.name);
        const forked = await forkCheckpoint(from, to, input.checkpointId, input.profileId);
        return structured({
          ...forked,
          url: to.watchUrl,
          message: `Computer "${forked.name}" boots with the /workspace of checkpoint ${forked.checkpointId}; name it to act on it, and poll its get_computer_status until lifecycle is running.`,
        });
      },
    }),
  ];
}
