/**
 * The timeline's actions: a restore and a fork of one of the watched computer's checkpoints are
 * calls of `restore_checkpoint` and `fork_computer` through the gateway as the person at the dock,
 * so permissions and policy apply and each is an audit row, like a relaunch from the page.
 */
import { PaddockError } from '../../shared/errors.js';
import { OWNER } from '../../shared/principal.js';
import type { Gateway } from '../../tools/gateway.js';
import type { CallerContext } from '../../tools/tool.js';
import type { DockComputer } from './sources.js';

/** Restore and fork of the watched computer's checkpoints. */
export interface DockCheckpointCalls {
  /** Restores checkpoint `checkpointId`; answers the checkpoint that holds the state it left. */
  restore(checkpointId: string): Promise<{ savedAs: string; generation: number }>;
  /** Boots named computer `name` from checkpoint `checkpointId`. */
  fork(checkpointId: string, name: string): Promise<{ name: string; generation: number }>;
}

/** The calls, as `caller` (the person at the dock), on the computer the dock watches. */
export function dockCheckpointCalls(
  gateway: Gateway | null,
  computer: DockComputer | null,
  caller: string,
): DockCheckpointCalls | null {
  if (!gateway || !computer?.target) return null;
  const target = computer.target.bind(computer);
  const call = async (tool: string, input: Record<string, unknown>) => {
    const context: CallerContext = {
      caller,
      principal: OWNER,
      via: 'direct',
      attended: true,
      computer: target(),
    };
    const outcome = await gateway.call(tool, input, context);
    if (!outcome.ok) throw outcome.error;
    if (outcome.result.isError)
      throw new PaddockError('UPSTREAM_ERROR', `${tool} reported an error; see the tool calls for details.`);
    return outcome.result.structured ?? {};
  };
  return {
    async restore(checkpointId) {
      const r = await call('restore_checkpoint', { checkpointId });
      return { savedAs: String(r.savedAs), generation: Number(r.generation) };
    },
    async fork(checkpointId, name) {
      const r = await call('fork_computer', { checkpointId, name });
      return { name: String(r.name), generation: Number(r.generation) };
    },
  };
}
