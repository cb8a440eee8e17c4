/**
 * Launch links: a stored boot spec (profile + optional startup script) behind `/launch/<id>`.
 * Creating one runs nothing; booting one is an explicit step (the dock's confirm page or
 * `paddock launch <id>`).
 */
import type { Database } from '../audit/database.js';
import { PaddockError } from '../shared/errors.js';
import { randomId } from '../shared/ids.js';
import type { Computer } from './computer.js';
import type { Lifecycle } from './events.js';
import type { JobResult } from './jobs/job.js';
import type { ComputerLog } from './logs.js';
import type { LaunchResult } from './status.js';

/** Largest startup script, in UTF-8 bytes. */
export const MAX_STARTUP_SCRIPT_BYTES = 2 * 1024 * 1024;

/** A stored launch link. */
export interface LaunchLink {
  id: string;
  /** Epoch milliseconds. */
  createdAt: number;
  profileId: string;
  /** Empty when the link only boots the profile. */
  startupScript: string;
}

const ID_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

/** Launch links over the `launch_links` table. */
export class LaunchLinkStore {
  private readonly insert;
  private readonly select;

  constructor(db: Database) {
    this.insert = db.prepare(
      'INSERT INTO launch_links (id, created_at, profile_id, startup_script) VALUES (?, ?, ?, ?)',
    );
    this.select = db.prepare(
      'SELECT id, created_at, profile_id, startup_script FROM launch_links WHERE id = ?',
    );
  }

  /** Stores a new link. */
  create(profileId: string, startupScript: string): LaunchLink {
    if (Buffer.byteLength(startupScript) > MAX_STARTUP_SCRIPT_BYTES) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        'The startup script is larger than 2 MiB; shorten it or have it download the rest.',
      );
    }
    const link: LaunchLink = { id: randomId('', 12), createdAt: Date.now(), profileId, startupScript };
    this.insert.run(link.id, link.createdAt, link.profileId, link.startupScript);
    return link;
  }

  /** A link by id; INVALID_ARGUMENT when malformed, NOT_FOUND when unknown. */
  get(id: string): LaunchLink {
    if (!ID_PATTERN.test(id)) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `"${id.slice(0, 80)}" is not a launch link id; copy the id from the /launch/<id> URL.`,
      );
    }
    const row = this.select.get(id) as
      | { id: string; created_at: number; profile_id: string; startup_script: string }
      | undefined;
    if (!row)
      throw new PaddockError(
        'NOT_FOUND',
        `No launch link "${id}"; check the URL or create a new link with create_launch_link.`,
      );
    return {
      id: row.id,
      createdAt: row.created_at,
      profileId: row.profile_id,
      startupScript: row.startup_script,
    };
  }
}

/** What booting a link needs from the computer it boots. */
export interface LaunchLinkHost {
  readonly computer: Computer | null;
  readonly log: ComputerLog;
  readonly dockUrl: string;
  launch(profileId: string, afterBoot?: (c: Computer) => Promise<void>): LaunchResult;
  startScript(c: Computer, script: string): Promise<JobResult>;
}

/** What booting a launch link reports. */
export interface LaunchLinkBoot {
  launch: LaunchResult;
  jobId: string | null;
  lifecycle: Lifecycle;
  bootError: string | null;
}

function requireStore(store: LaunchLinkStore | null): LaunchLinkStore {
  if (!store) {
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      'Launch links need the server database; start Paddock with a data directory.',
    );
  }
  return store;
}

/** Stores a launch link for `profileId` and answers it with its URL. */
export function createLaunchLink(
  host: LaunchLinkHost,
  store: LaunchLinkStore | null,
  profileId: string,
  startupScript: string,
): LaunchLink & { url: string } {
  const link = requireStore(store).create(profileId, startupScript);
  host.log.add('info', 'launch_link.create', `Launch link ${link.id} created for profile ${profileId}.`);
  return { ...link, url: `${host.dockUrl}launch/${link.id}` };
}

/**
 * Boots a launch link on `host`: launches its profile and, once running, starts its startup
 * script as a job. Resolves with the launch result and, when there is a script, the job's id.
 */
export async function bootLaunchLink(
  host: LaunchLinkHost,
  store: LaunchLinkStore | null,
  id: string,
): Promise<LaunchLinkBoot> {
  const link = requireStore(store).get(id);
  let started: (jobId: string | null) => void = () => undefined;
  const jobStarted = new Promise<string | null>((resolve) => {
    started = resolve;
  });
  const launch = host.launch(link.profileId, async (c) => {
    if (!link.startupScript) return started(null);
    try {
      const r = await host.startScript(c, link.startupScript);
      host.log.add('info', 'launch_link.boot', `Launch link ${id} started its script as ${r.jobId}.`, {
        generation: c.generation,
        jobId: r.jobId,
      });
      started(r.jobId);
    } catch (e) {
      started(null);
      throw e;
    }
  });
  const c = host.computer!;
  await c.booted;
  const jobId = c.lifecycle === 'running' ? await jobStarted : null;
  return { launch, jobId, lifecycle: c.lifecycle, bootError: c.bootError };
}
