import { PaddockError } from '../../shared/errors.js';
import type { Generation } from '../generation/generation.js';
import { parseId } from '../ids.js';
import type { Job } from './job.js';
import { MAX_FINISHED_JOBS } from './job-table.js';

/**
 * The job behind an id in computer `current`: STALE_GENERATION when the id is of an older
 * generation of this computer, NOT_FOUND when it is unknown here (another computer's ids
 * included) or its output was dropped, INVALID_ARGUMENT when it is no job id.
 */
export function resolveJobId(
  jobId: string,
  current: Generation | null,
  launchedHere: (generation: number) => boolean,
): { computer: Generation; job: Job } {
  const { generation, n } = parseId(jobId, 'job');
  const c = current;
  if (c && generation < c.generation && launchedHere(generation)) {
    throw new PaddockError(
      'STALE_GENERATION',
      `${jobId} belongs to generation ${generation}, which was replaced by generation ${c.generation}; its processes are gone. Run the command again.`,
    );
  }
  const job = c && generation === c.generation ? c.jobs.get(n) : undefined;
  if (c && !job && generation === c.generation && c.jobs.had(n)) {
    throw new PaddockError(
      'NOT_FOUND',
      `${jobId} finished a while ago and its output was dropped (only the newest ${MAX_FINISHED_JOBS} finished jobs are kept); run the command again if you need its output.`,
    );
  }
  if (!c || !job)
    throw new PaddockError(
      'NOT_FOUND',
      `No job ${jobId} in the current computer; use a jobId that run_command returned.`,
    );
  return { computer: c, job };
}
