/**
 * The policy's executable resolver, answered from inside a computer by its guest agent (the host
 * never resolves a guest path itself; file paths are judged in the guest, see files.ts).
 */
import type { ExecResolver } from '../policy/types.js';
import type { Generation } from './generation/generation.js';

/** An ExecResolver over the running computer `running()` returns. */
export function guestExecResolver(running: () => Promise<Generation>, signal?: AbortSignal): ExecResolver {
  return {
    which: async (name: string, searchPath: readonly string[]) =>
      (await (await running()).call('which', { name, searchPath: [...searchPath] }, { signal })).path,
  };
}
