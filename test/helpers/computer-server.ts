/**
 * A ComputerService over real bwrap sandboxes and a data directory of the test's own, with
 * sessions that call its computer tools as the owner: private computers, or named ones.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BwrapBackend } from '../../src/computer/backend/bwrap/backend.js';
import { ImageStore, imageIdsOf } from '../../src/computer/images/index.js';
import { ProfileImages } from '../../src/computer/images/profile-image.js';
import { ComputerService } from '../../src/computer/service.js';
import { createComputerTools } from '../../src/computer/tools/index.js';
import { computerSchema } from '../../src/config/computer-schema.js';
import { policySchema } from '../../src/config/schema.js';
import { createWhitelistSandbox } from '../../src/policy/index.js';
import { silentLogger } from '../../src/shared/logger.js';
import { OWNER } from '../../src/shared/principal.js';
import type { CallerContext, Tool, ToolContext } from '../../src/tools/tool.js';

export type Result = Record<string, unknown>;
/** Calls a computer tool as one caller. */
export type Session = (name: string, input?: Result) => Promise<Result>;

export interface Server {
  service: ComputerService;
  /** The data directory (inside `root`). */
  dataDir: string;
  /** A session: private unless it names a computer. */
  session(id: string, computer?: string): Session;
}

const policy = createWhitelistSandbox(policySchema.parse({}));

/**
 * A service over a data directory; `root` is a directory of the test's own that holds it.
 * `imagesDir`: an image store that profiles with an image boot from.
 */
export function startServer(
  root: string,
  computer: Record<string, unknown> = {},
  imagesDir?: string,
): Server {
  const dataDir = join(root, 'data');
  mkdirSync(dataDir, { recursive: true });
  const logger = silentLogger();
  const backend = new BwrapBackend({ logger });
  const config = computerSchema.parse({ autoLaunch: false, ...computer });
  const service = new ComputerService({
    backend,
    config,
    ...(imagesDir
      ? {
          images: new ProfileImages(new ImageStore(imagesDir, imageIdsOf(config)).open(), dataDir, () =>
            backend.imageSupport(),
          ),
        }
      : {}),
    dataDir,
    dockUrl: 'http://127.0.0.1:7331',
    logger,
  });
  const tools = new Map<string, Tool>(createComputerTools(service).map((t) => [t.name, t]));
  let calls = 0;
  const session = (id: string, name?: string): Session => {
    const caller: CallerContext = {
      principal: OWNER,
      caller: `mcp:${id}`,
      via: 'direct',
      attended: true,
      computer: name ? { kind: 'named', name } : { kind: 'private', owner: `mcp:${id}` },
    };
    return async (tool, input = {}) => {
      const ctx: ToolContext = {
        invocationId: `inv_${id}_${++calls}`,
        caller,
        signal: new AbortController().signal,
        deadline: Date.now() + 600_000,
        policy,
        logger,
        notePolicyRule: () => undefined,
        noteComputer: () => undefined,
        progress: () => undefined,
      } as ToolContext;
      return (await tools.get(tool)!.execute(input, ctx)).structured!;
    };
  };
  return { service, dataDir, session };
}

export async function withServer(
  computer: Record<string, unknown>,
  fn: (server: Server, root: string) => Promise<void>,
  imagesDir?: string,
): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'paddock-sessions-'));
  const server = startServer(root, computer, imagesDir);
  try {
    await fn(server, root);
  } catch (e) {
    console.error(JSON.stringify(server.service.list(), null, 2));
    throw e;
  } finally {
    await server.service.close();
    rmSync(root, { recursive: true, force: true });
  }
}
