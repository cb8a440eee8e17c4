/**
 * Test fixtures for the computer: a real ComputerManager over real bwrap sandboxes in a
 * temporary data directory, a hand-built ToolContext with the real WhitelistSandbox, and
 * polling helpers. On failure the computer's status and logs are printed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BwrapBackend } from '../../../src/computer/backend/bwrap/backend.js';
import { childrenOf } from '../../../src/computer/backend/bwrap/proc.js';
import type { Generation } from '../../../src/computer/generation/generation.js';
import { ImageStore, imageIdsOf } from '../../../src/computer/images/index.js';
import { ProfileImages } from '../../../src/computer/images/profile-image.js';
import { ComputerManager } from '../../../src/computer/manager.js';
import { createComputerBuiltins } from '../../../src/computer/tools/computer-builtins.js';
import { createComputerTools } from '../../../src/computer/tools/index.js';
import { computerSchema } from '../../../src/config/computer-schema.js';
import { policySchema } from '../../../src/config/schema.js';
import { createWhitelistSandbox } from '../../../src/policy/index.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { OWNER } from '../../../src/shared/principal.js';
import { openDatabase } from '../../../src/store/sqlite/database.js';
import { SqliteLaunchLinkStore } from '../../../src/store/sqlite/launch-link-store.js';
import type { Tool, ToolContext } from '../../../src/tools/tool.js';
import { pollUntil } from '../../helpers/poll.js';

export interface Fixture {
  manager: ComputerManager;
  dataDir: string;
  /** Lineage noted by tools through ctx.noteComputer, newest last. */
  noted: { generation?: number; jobId?: string }[];
  /** A ToolContext with the real WhitelistSandbox (policy as given, defaults otherwise). */
  ctx(): ToolContext;
}

export interface FixtureOptions {
  /** The `computer` config section (parsed with its schema). */
  computer?: Record<string, unknown>;
  /** The `policy` config section. */
  policy?: Record<string, unknown>;
  /** Open a real SQLite database for launch links. */
  database?: boolean;
  /** Backend options (e.g. `useCgroups: false` for the rlimit fallback, `useDiskImages: false`). */
  backend?: { useCgroups?: boolean; useDiskImages?: boolean };
  /** An image store (its directory) that profiles with an image boot from. */
  imagesDir?: string;
}

/** Runs `fn` with a fresh manager; cleans up pass or fail, printing status and logs on failure. */
export async function withComputer(
  options: FixtureOptions,
  fn: (f: Fixture) => Promise<void>,
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-computer-'));
  const db = options.database ? openDatabase(join(dataDir, 'paddock.db')) : null;
  const logger = silentLogger();
  const backend = new BwrapBackend({ logger, ...options.backend });
  const config = computerSchema.parse(options.computer ?? {});
  const manager = new ComputerManager({
    backend,
    config,
    ...(options.imagesDir
      ? {
          images: new ProfileImages(
            new ImageStore(options.imagesDir, imageIdsOf(config)).open(),
            dataDir,
            () => backend.imageSupport(),
          ),
        }
      : {}),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
    launchLinks: db ? new SqliteLaunchLinkStore(db) : null,
  });
  const policy = createWhitelistSandbox(policySchema.parse(options.policy ?? {}));
  const noted: Fixture['noted'] = [];
  const ctx = (): ToolContext => {
    const controller = new AbortController();
    return {
      invocationId: 'inv_test',
      caller: { principal: OWNER, caller: 'cli', via: 'direct', attended: true },
      signal: controller.signal,
      deadline: Date.now() + 600_000,
      policy,
      logger,
      notePolicyRule: () => undefined,
      noteComputer: (info) => noted.push(info),
      progress: () => undefined,
    };
  };
  try {
    await fn({ manager, dataDir, noted, ctx });
  } catch (e) {
    const status = manager.status();
    const logs = manager.log
      .read({ limit: 200 })
      .entries.map((l) => `${l.sinceBootMs}ms ${l.level} ${l.event} ${l.message}`);
    console.error(
      `computer generation ${status.generation} (${status.lifecycle}) ${status.bootError ?? ''}\n${logs.join('\n')}`,
    );
    throw e;
  } finally {
    await manager.close();
    db?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Launches `profileId` and waits until it is running. */
export async function launchRunning(manager: ComputerManager, profileId = 'shell'): Promise<Generation> {
  manager.launch(profileId);
  const c = manager.computer!;
  await c.booted;
  if (c.lifecycle !== 'running') throw new Error(`boot failed: ${c.bootError}`);
  return c;
}

/** Every host process below `rootPid` (breadth-first, from the host's /proc). */
export function hostDescendants(rootPid: number): number[] {
  const out: number[] = [];
  let level = [rootPid];
  while (level.length > 0) {
    const next: number[] = [];
    for (const pid of level) for (const child of childrenOf(pid)) next.push(child);
    out.push(...next);
    level = next;
  }
  return out;
}

/** The command line of a host process (`\0` → space), or null when it is gone. */
export function cmdlineOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return null;
  }
}

/** Host pids below the computer whose command line is exactly `cmd`. */
export function sandboxProcesses(c: Generation, cmd: string): number[] {
  return hostDescendants(c.instance!.hostPid).filter((pid) => cmdlineOf(pid) === cmd);
}

/** Calls a computer tool (or list_dir / shell) by name and returns its structured result. */
export type Call = (name: string, input?: Record<string, unknown>) => Promise<Record<string, unknown>>;

/** Every computer tool and computer built-in of `manager`, called with a fresh context each time. */
export function toolCaller(manager: ComputerManager, ctx: () => ToolContext): Call {
  const tools = new Map<string, Tool>(
    [...createComputerTools(manager), ...createComputerBuiltins(manager)].map((t) => [t.name, t]),
  );
  return async (name, input = {}) => (await tools.get(name)!.execute(input, ctx())).structured!;
}

/** The error code a call fails with, or `ok`. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return isPaddockError(e) ? e.code : String(e);
  }
}

/** Runs a script and polls until its root's exit is observed; returns the whole read. */
export async function runUntilExit(manager: ComputerManager, script: string, timeoutMs = 30_000) {
  const r = await manager.runCommand({ script, waitMs: 10_000, timeoutMs });
  return pollUntil(
    () => {
      const now = manager.readJob(r.jobId, undefined, 65_536);
      return now.terminationObserved ? now : null;
    },
    `job ${r.jobId}`,
    timeoutMs,
  );
}

/** Reads a terminal by cursor until `pattern` matches what was read since `from`. */
export async function readTerminalUntil(
  call: Call,
  terminalId: string,
  pattern: RegExp,
  what: string,
  from?: string,
): Promise<{ text: string; cursor: string | undefined }> {
  let text = '';
  let cursor = from;
  await pollUntil(
    async () => {
      const r = await call('read_terminal_output', { terminalId, cursor, byteLimit: 65_536 });
      text += String(r.output);
      cursor = String(r.nextCursor);
      return pattern.test(text);
    },
    what,
    20_000,
  );
  return { text, cursor };
}
