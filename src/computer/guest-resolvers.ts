/**
 * Policy resolvers that answer from inside a computer: symlinks and executables are resolved
 * by its guest agent (the host never resolves a guest path itself).
 */
import type { ExecResolver, PathResolver } from '../policy/types.js';
import type { Computer } from './computer.js';

/** A PathResolver over the running computer `running()` returns. */
export function guestPathResolver(running: () => Promise<Computer>, signal?: AbortSignal): PathResolver {
  return {
    realpath: async (path: string) =>
      (await (await running()).call('fs.realpath', { path }, { signal })).path,
    readlink: async (path: string) =>
      (await (await running()).call('fs.readlink', { path }, { signal })).target,
  };
}

/** An ExecResolver over the running computer `running()` returns. */
export function guestExecResolver(running: () => Promise<Computer>, signal?: AbortSignal): ExecResolver {
  return {
    which: async (name: string, searchPath: readonly string[]) =>
      (await (await running()).call('which', { name, searchPath: [...searchPath] }, { signal })).path,
  };
}
