/**
 * Long-running services of a computer (jobs started with run_command's `background`) and the
 * ports the computer listens on: what get_computer_status, the dock and the preview show.
 */

import type { ComputerEvents } from '../events.js';
import type { JobState } from '../jobs/job.js';
import { portsOfProcesses } from '../jobs/listening-ports.js';
import type { PreviewState } from '../preview/preview-state.js';
import type { Generation } from './generation.js';

/** One service as get_computer_status lists it. */
export interface ServiceInfo {
  [key: string]: unknown;
  jobId: string;
  /** One-line summary of what it runs. */
  command: string;
  state: JobState;
  /** TCP ports its processes listen on right now (empty where the backend cannot tell). */
  ports: number[];
}

/** The background jobs of `c`, newest last, with their listening ports. */
export function servicesOf(c: Generation | null): ServiceInfo[] {
  if (!c) return [];
  return c.jobs
    .list()
    .filter((j) => j.background)
    .map((j) => ({
      jobId: j.id,
      command: j.command,
      state: j.lifecycle,
      ports: c.listening.portsOf(c.jobs.hostPids(j) ?? []),
    }));
}

/** Every TCP port something inside the running computer `c` listens on. */
export function listeningPortsOf(c: Generation | null): number[] {
  if (c?.lifecycle !== 'running' || !c.instance) return [];
  return c.listening.ports();
}

/** The job (any job, service or not) whose processes listen on `port`, if the backend can tell. */
export function jobListeningOn(c: Generation | null, port: number): string | null {
  if (!c) return null;
  for (const j of c.jobs.list()) {
    const pids = c.jobs.hostPids(j);
    if (pids && portsOfProcesses(pids).includes(port)) return j.id;
  }
  return null;
}

/**
 * Whether job `jobId`, whose root just exited, took the preview's server with it: it served the
 * preview and either its whole family was ended (timeout, cancel, signal) or none of its processes
 * listens on the port any more. Answers the job's state and how it ended, or null.
 */
export function jobEndedServing(
  c: Generation | null,
  jobId: string,
  preview: PreviewState,
): { state: JobState; how: string } | null {
  if (!c || preview.jobId !== jobId || preview.port === null) return null;
  const job = c.jobs.list().find((j) => j.id === jobId);
  if (!job) return null;
  const state = job.lifecycle;
  if (state === 'exited') {
    const pids = c.jobs.hostPids(job);
    if (pids && portsOfProcesses(pids).includes(preview.port)) return null;
  }
  const how =
    state === 'timed_out'
      ? 'was killed at its timeout'
      : state === 'cancelled'
        ? 'was cancelled'
        : job.signal
          ? `was killed by ${job.signal}`
          : `exited with code ${job.exitCode}`;
  return { state, how };
}

/** How often the ports of running services are read again. */
const PORTS_EVERY_MS = 1000;

/**
 * Follows the ports of a computer's running services: a listening socket makes no event, so
 * while a service runs its ports are read every second, and a change is reported once.
 */
export class ServicePorts {
  private timer: NodeJS.Timeout | null = null;
  private readonly last = new Map<string, string>();

  constructor(
    private readonly computer: () => Generation | null,
    private readonly changed: (generation: number, jobId: string, ports: number[]) => void,
  ) {}

  /** A job started: follow services until none runs. */
  wake(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), PORTS_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.last.clear();
  }

  private tick(): void {
    const c = this.computer();
    const running = c ? servicesOf(c).filter((s) => s.state === 'running') : [];
    if (!c || running.length === 0) {
      this.stop();
      return;
    }
    for (const s of running) {
      const key = s.ports.join(',');
      if (this.last.get(s.jobId) === key) continue;
      this.last.set(s.jobId, key);
      this.changed(c.generation, s.jobId, s.ports);
    }
  }
}

/** What {@link followServices} tells the preview. */
interface PreviewFollower {
  state(): PreviewState;
  jobEnded(generation: number, jobId: string, state: string, how: string): void;
}

/**
 * Follows computer `name`'s services on its event bus: their ports while they run (`job.ports`
 * events), and the preview told when the job that served it ended (not only on its next request).
 */
export function followServices(
  name: string,
  events: ComputerEvents,
  current: () => Generation | null,
  preview: PreviewFollower,
): void {
  const ports = new ServicePorts(current, (generation, jobId, open) =>
    events.emit({ type: 'job.ports', computer: name, generation, jobId, ports: open }),
  );
  events.on((e) => {
    if (e.computer !== name) return;
    if (e.type === 'job.started') ports.wake();
    if (e.type !== 'job.exited') return;
    const ended = jobEndedServing(current(), e.jobId, preview.state());
    if (ended) preview.jobEnded(e.generation, e.jobId, ended.state, ended.how);
  });
}
