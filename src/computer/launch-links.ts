/**
 * Launch links: a stored boot spec (profile + optional startup script) behind `/launch/<id>`.
 * Creating one runs nothing; booting one is an explicit step (the dock's confirm page or
 * `paddock launch <id>`).
 */
import { PaddockError } from '../shared/errors.js';
import type { LaunchLink, LaunchLinkStore } from '../store/launch-links.js';
import type { Lifecycle } from './events.js';
import type { Generation } from './generation/generation.js';
import type { JobResult } from './jobs/job.js';
import type { ComputerLog } from './logs.js';
import type { LaunchResult } from './status.js';

export { type LaunchLink, MAX_STARTUP_SCRIPT_BYTES } from '../store/launch-links.js';

/** What booting a link needs from the computer it boots. */
export interface LaunchLinkHost {
  readonly computer: Generation | null;
  readonly log: ComputerLog;
  readonly dockUrl: string;
  launch(profileId: string, afterBoot?: (c: Generation) => Promise<void>): LaunchResult;
  startScript(c: Generation, script: string): Promise<JobResult>;
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
export async function createLaunchLink(
  host: LaunchLinkHost,
  store: LaunchLinkStore | null,
  profileId: string,
  startupScript: string,
): Promise<LaunchLink & { url: string }> {
  const link = await requireStore(store).create(profileId, startupScript);
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
  const link = await requireStore(store).get(id);
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
