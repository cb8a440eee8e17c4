/**
 * The rules of a confined program (the `shell` built-in's): which files the kernel lets it and
 * everything it starts execute, and where they may write. The host names the program, the
 * helpers its exec rule allows and the `files.write` roots; the guest turns them into the rule
 * tokens of the jobs' launcher (`paddock-scope --confine TOKEN… -- PROGRAM ARG…`, see the host's
 * backend/confine-program.ts), resolving every path in its own view of the filesystem:
 *
 * - each executable by its real path, with what the kernel itself opens to run it: the dynamic
 *   loader an ELF names (PT_INTERP) and the interpreter of a `#!` script (for `#!/usr/bin/env
 *   NAME`, env and NAME found on the job's PATH), followed a few levels deep;
 * - each write root only when it has no link on its path (a job could have planted one to
 *   point the root elsewhere), as a directory or a single file;
 * - the sinks /dev/null, /dev/zero and /dev/full, whose writes change nothing and which
 *   ordinary programs open for writing;
 * - with a tool channel, the job's own channel directories (the clients make their reply FIFOs
 *   there) and `mkfifo`, which the Node client starts to make them: it can only make FIFOs,
 *   under the same write rules.
 *
 * A path that does not exist is left out: a rule can only ever grant less.
 */
import { constants } from 'node:fs';
import { access, open, realpath, stat } from 'node:fs/promises';
import { SHELL_POOL_SUFFIX } from './account.js';

/** The launcher's first argument that selects confinement. */
export const CONFINE_FLAG = '--confine';
/** Ends the rule tokens; the program and its arguments follow. */
export const CONFINE_END = '--';
/** First character of a rule token; the path follows it. */
export const ConfineToken = {
  /** Execute this file, or any file beneath this directory. */
  Execute: 'x',
  /** Write beneath this directory: create, write, truncate, remove, rename and link within. */
  WriteBeneath: 'w',
  /** Write (and truncate) this one existing file. */
  WriteFile: 'f',
} as const;

/** What the host asks for: the program and its rule's helpers, and the write roots. */
export interface ConfineRequest {
  /** Absolute paths the program may execute: itself first, then its rule's helpers. */
  execute: string[];
  /** The files.write roots. */
  write: string[];
}

/** Devices a confined program may write: sinks, whose writes change nothing. */
export const CONFINE_SINKS = ['/dev/null', '/dev/zero', '/dev/full'];

/** How deep interpreters of interpreters are followed (`#!/usr/bin/env node` is two). */
const MAX_INTERPRETER_DEPTH = 4;
/** Bytes read to find a `#!` line (Linux reads at most 256). */
const SHEBANG_BYTES = 256;
/** Program headers looked at in an ELF file. */
const MAX_PROGRAM_HEADERS = 64;

/**
 * The launcher's tokens for `request` (everything before {@link CONFINE_END}), resolved here.
 * `channelDir`: the job's tool-channel directory, when it has one; `searchPath`: the job's PATH.
 */
export async function confineTokens(
  request: ConfineRequest,
  options: { channelDir?: string; searchPath: string },
): Promise<string[]> {
  const tokens = new Set<string>();
  const dirs = options.searchPath.split(':').filter((d) => d.startsWith('/'));
  const executables = [...request.execute];
  if (options.channelDir) {
    const mkfifo = await onPath('mkfifo', dirs);
    if (mkfifo) executables.push(mkfifo);
  }
  for (const path of executables) await addExecutable(tokens, path, dirs, 0);
  for (const root of request.write) {
    const kind = await writeKind(root);
    if (kind) tokens.add(`${kind}${root}`);
  }
  for (const sink of CONFINE_SINKS) {
    if ((await stat(sink).catch(() => null))?.isCharacterDevice())
      tokens.add(`${ConfineToken.WriteFile}${sink}`);
  }
  if (options.channelDir) {
    for (const dir of [options.channelDir, `${options.channelDir}${SHELL_POOL_SUFFIX}`]) {
      if ((await writeKind(dir)) === ConfineToken.WriteBeneath)
        tokens.add(`${ConfineToken.WriteBeneath}${dir}`);
    }
  }
  return [...tokens];
}

/** The launcher's argv that runs `argv` confined by `tokens`. */
export function confinedArgv(launcher: string, tokens: string[], argv: string[]): string[] {
  return [launcher, CONFINE_FLAG, ...tokens, CONFINE_END, ...argv];
}

/** Adds an executable by its real path, and what the kernel opens to run it. */
async function addExecutable(
  tokens: Set<string>,
  path: string,
  dirs: string[],
  depth: number,
): Promise<void> {
  const real = await realpath(path).catch(() => null);
  if (!real) return;
  const info = await stat(real).catch(() => null);
  if (!info) return;
  const token = `${ConfineToken.Execute}${real}`;
  if (tokens.has(token)) return;
  tokens.add(token);
  if (!info.isFile() || depth >= MAX_INTERPRETER_DEPTH) return;
  for (const next of await interpretersOf(real, dirs)) await addExecutable(tokens, next, dirs, depth + 1);
}

/** The loader or interpreters the kernel opens to run the file at `path` (none when unknown). */
export async function interpretersOf(path: string, dirs: string[]): Promise<string[]> {
  const file = await open(path, 'r').catch(() => null);
  if (!file) return [];
  try {
    const head = Buffer.alloc(SHEBANG_BYTES);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    const bytes = head.subarray(0, bytesRead);
    if (bytes[0] === 0x23 && bytes[1] === 0x21) return shebangInterpreters(bytes, dirs);
    if (bytes.length >= 64 && bytes.readUInt32BE(0) === 0x7f454c46) {
      const loader = await elfInterpreter(file, bytes);
      return loader ? [loader] : [];
    }
    return [];
  } finally {
    await file.close();
  }
}

/** The interpreter of a `#!` line, and for `env NAME` also NAME found on the PATH. */
async function shebangInterpreters(bytes: Buffer, dirs: string[]): Promise<string[]> {
  const end = bytes.indexOf(0x0a);
  const line = bytes
    .subarray(2, end === -1 ? bytes.length : end)
    .toString('latin1')
    .trim();
  const [interpreter, ...rest] = line.split(/[ \t]+/);
  if (!interpreter?.startsWith('/')) return [];
  if (!/(^|\/)env$/.test(interpreter)) return [interpreter];
  // `env [-S] [NAME=VALUE…] NAME …`: the first word that is neither an option nor an assignment
  const name = rest.find((word) => !word.startsWith('-') && !word.includes('='));
  if (!name) return [interpreter];
  const found = name.startsWith('/') ? name : await onPath(name, dirs);
  return found ? [interpreter, found] : [interpreter];
}

/** PT_INTERP of a 64-bit little-endian ELF file whose first bytes are `head`. */
async function elfInterpreter(
  file: import('node:fs/promises').FileHandle,
  head: Buffer,
): Promise<string | null> {
  if (head[4] !== 2 || head[5] !== 1) return null;
  const phoff = Number(head.readBigUInt64LE(32));
  const phentsize = head.readUInt16LE(54);
  const phnum = Math.min(head.readUInt16LE(56), MAX_PROGRAM_HEADERS);
  if (phentsize < 56 || phnum === 0) return null;
  const table = Buffer.alloc(phentsize * phnum);
  const { bytesRead } = await file.read(table, 0, table.length, phoff);
  for (let i = 0; (i + 1) * phentsize <= bytesRead; i++) {
    const at = i * phentsize;
    if (table.readUInt32LE(at) !== 3) continue; // PT_INTERP
    const offset = Number(table.readBigUInt64LE(at + 8));
    const size = Math.min(Number(table.readBigUInt64LE(at + 32)), 4096);
    const text = Buffer.alloc(size);
    const got = await file.read(text, 0, size, offset);
    const path = text.subarray(0, got.bytesRead).toString('latin1').replace(/\0.*$/s, '');
    return path.startsWith('/') ? path : null;
  }
  return null;
}

/** The first executable regular file `<dir>/<name>` on the search path. */
async function onPath(name: string, dirs: string[]): Promise<string | null> {
  if (name.includes('/')) return null;
  for (const dir of dirs) {
    const candidate = dir === '/' ? `/${name}` : `${dir}/${name}`;
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** How a write root is granted: beneath a directory, one file, or not at all (missing, or reached through a link). */
async function writeKind(root: string): Promise<string | null> {
  const real = await realpath(root).catch(() => null);
  if (real !== root) return null;
  const info = await stat(root).catch(() => null);
  if (info?.isDirectory()) return ConfineToken.WriteBeneath;
  if (info?.isFile()) return ConfineToken.WriteFile;
  return null;
}
