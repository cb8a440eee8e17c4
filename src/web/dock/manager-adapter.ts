/**
 * The dock's view of the ComputerManager. Changes are found by following the computer log
 * (launch, boot, job start and exit all write an entry) and by comparing the status and the
 * running jobs' output offsets, on a short interval while at least one page listens. When the
 * manager offers `onEvent`, each event triggers the same comparison at once.
 */

import type { ComputerManager } from '../../computer/manager.js';
import type { OutputBuffer } from '../../computer/output-buffer.js';
import { isPaddockError, PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { utf8Inner } from '../../shared/text.js';
import type { DockJob, DockLogEntry, DockProfile, DockStatus } from './protocol.js';
import type {
  ComputerChange,
  Disposable,
  DockComputer,
  LaunchLinkBoot,
  LaunchLinkView,
  PreviewSource,
  TerminalSource,
} from './sources.js';

/** Options of {@link dockComputerFromManager}. */
export interface ManagerAdapterOptions {
  logger: Logger;
  /** How often changes are looked for while a page listens. Default 250 ms. */
  pollMs?: number;
  /** Bytes of each output stream a job message carries. Default 8 KiB. */
  tailBytes?: number;
  terminals?: TerminalSource | null;
  preview?: PreviewSource | null;
}

/** The event hook the dock uses when the manager has one (any event triggers a refresh). */
interface EventedManager {
  onEvent(listener: (event: unknown) => void): Disposable;
}

const MAX_TRACKED_JOBS = 200;
const LOG_PAGE = 500;

interface TrackedJob {
  command: string;
  fingerprint: string;
}

/** A DockComputer over a ComputerManager; `close` stops its timer. */
export function dockComputerFromManager(
  manager: ComputerManager,
  options: ManagerAdapterOptions,
): DockComputer & { close(): void } {
  return new ManagerAdapter(manager, options);
}

class ManagerAdapter implements DockComputer {
  readonly terminals: TerminalSource | null;
  readonly preview: PreviewSource | null;
  private readonly listeners = new Set<(change: ComputerChange) => void>();
  private readonly tracked = new Map<string, TrackedJob>();
  private readonly pollMs: number;
  private readonly tailBytes: number;
  private logCursor: string | undefined;
  private lastStatus = '';
  private generation: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private hook: Disposable | null = null;

  constructor(
    private readonly manager: ComputerManager,
    private readonly options: ManagerAdapterOptions,
  ) {
    this.pollMs = options.pollMs ?? 250;
    this.tailBytes = options.tailBytes ?? 8192;
    this.terminals = options.terminals ?? null;
    this.preview = options.preview ?? null;
    this.generation = manager.computer?.generation ?? null;
    this.lastStatus = JSON.stringify(this.status());
    for (const entry of this.readNewLogs()) this.noteLog(entry);
  }

  status(): DockStatus {
    const s = this.manager.status();
    return {
      generation: s.generation,
      profileId: s.profileId,
      profileName: s.profileName,
      lifecycle: s.lifecycle,
      bootError: s.bootError,
      bootMs: s.bootMs,
      capabilities: s.capabilities,
      message: s.lifecycle === 'none' ? 'No computer is running; pick a profile and launch one.' : null,
    };
  }

  profiles(): DockProfile[] {
    return this.manager.listProfiles().map((p) => ({
      id: p.id,
      name: p.name,
      description: p.description,
      available: p.available,
      unavailableReason: p.unavailableReason,
    }));
  }

  async launch(profileId: string): Promise<void> {
    this.manager.launch(profileId);
    this.refresh();
  }

  jobs(): DockJob[] {
    const out: DockJob[] = [];
    for (const id of this.tracked.keys()) {
      const job = this.job(id);
      if (job) out.push(job);
    }
    return out;
  }

  job(jobId: string): DockJob | undefined {
    let job: ReturnType<ComputerManager['resolveJob']>['job'];
    try {
      job = this.manager.resolveJob(jobId).job;
    } catch {
      return undefined;
    }
    const stdout = tail(job.stdout, this.tailBytes);
    const stderr = tail(job.stderr, this.tailBytes);
    let state: DockJob['state'] = 'running';
    if (job.terminationObserved) {
      if (job.canceled) state = 'canceled';
      else if (job.timedOut) state = 'timed_out';
      else if (job.signal) state = 'killed';
      else state = job.exitCode === 0 ? 'exited' : 'failed';
    }
    return {
      jobId: job.id,
      generation: job.generation,
      command: this.tracked.get(jobId)?.command ?? '',
      state,
      exitCode: job.exitCode,
      signal: job.signal,
      durationMs: job.durationMs,
      stdoutTail: stdout,
      stderrTail: stderr,
      outputBytes: job.stdout.endOffset + job.stderr.endOffset,
    };
  }

  recentLogs(limit: number): DockLogEntry[] {
    const all = this.manager.readLogs({ limit: 100_000 }).entries;
    return all.slice(-limit).map(toDockLog);
  }

  launchLink(id: string): LaunchLinkView {
    const store = this.manager.launchLinks;
    if (!store) {
      throw new PaddockError(
        'UNSUPPORTED_CAPABILITY',
        'Launch links need the server database; start Paddock with a data directory.',
      );
    }
    const link = store.get(id);
    const profile = this.profiles().find((p) => p.id === link.profileId) ?? {
      id: link.profileId,
      name: link.profileId,
      description: '',
      available: false,
      unavailableReason: 'This server has no profile with that id.',
    };
    return { id: link.id, createdAt: link.createdAt, profile, startupScript: link.startupScript };
  }

  async bootLaunchLink(id: string): Promise<LaunchLinkBoot> {
    const booting = this.manager.bootLaunchLink(id);
    queueMicrotask(() => this.refresh());
    const r = await booting;
    this.refresh();
    return { lifecycle: r.lifecycle, bootError: r.bootError, jobId: r.jobId };
  }

  onChange(listener: (change: ComputerChange) => void): Disposable {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.start();
    return {
      dispose: () => {
        if (this.listeners.delete(listener) && this.listeners.size === 0) this.stop();
      },
    };
  }

  close(): void {
    this.listeners.clear();
    this.stop();
  }

  private start(): void {
    const evented = this.manager as unknown as Partial<EventedManager>;
    if (typeof evented.onEvent === 'function') this.hook = evented.onEvent(() => this.refresh());
    this.timer = setInterval(() => this.refresh(), this.pollMs);
    this.timer.unref();
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.hook?.dispose();
    this.hook = null;
  }

  /** Looks for changes and tells the listeners. */
  private refresh(): void {
    try {
      const status = this.status();
      if (status.generation !== this.generation) {
        this.generation = status.generation;
        this.tracked.clear();
      }
      for (const entry of this.readNewLogs()) {
        this.noteLog(entry);
        this.emit({ kind: 'log', entry });
      }
      const json = JSON.stringify(status);
      if (json !== this.lastStatus) {
        this.lastStatus = json;
        this.emit({ kind: 'status' });
      }
      for (const [jobId, t] of this.tracked) {
        const fp = this.fingerprint(jobId);
        if (fp !== t.fingerprint) {
          t.fingerprint = fp;
          this.emit({ kind: 'job', jobId });
        }
      }
    } catch (e) {
      this.options.logger.warn('dock.refresh_failed', { error: (e as Error).message });
    }
  }

  private readNewLogs(): DockLogEntry[] {
    let page: ReturnType<ComputerManager['readLogs']>;
    try {
      page = this.manager.readLogs({ cursor: this.logCursor, limit: LOG_PAGE });
    } catch (e) {
      if (!isPaddockError(e) || typeof e.details.oldestCursor !== 'string') throw e;
      this.logCursor = e.details.oldestCursor;
      page = this.manager.readLogs({ cursor: this.logCursor, limit: LOG_PAGE });
    }
    this.logCursor = page.nextCursor;
    return page.entries.map(toDockLog);
  }

  private noteLog(entry: DockLogEntry): void {
    if (entry.event !== 'job.start' || !entry.jobId || entry.generation !== this.generation) return;
    const prefix = `${entry.jobId} started: `;
    const command = entry.message.startsWith(prefix) ? entry.message.slice(prefix.length) : entry.message;
    this.tracked.set(entry.jobId, { command, fingerprint: '' });
    while (this.tracked.size > MAX_TRACKED_JOBS) {
      const oldest = this.tracked.keys().next().value;
      if (oldest === undefined) break;
      this.tracked.delete(oldest);
    }
  }

  private fingerprint(jobId: string): string {
    try {
      const { job } = this.manager.resolveJob(jobId);
      return `${job.stdout.endOffset}:${job.stderr.endOffset}:${job.terminationObserved}`;
    } catch {
      return 'gone';
    }
  }

  private emit(change: ComputerChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

function toDockLog(e: {
  seq: number;
  sinceBootMs: number;
  level: DockLogEntry['level'];
  event: string;
  message: string;
  generation?: number;
  jobId?: string;
}): DockLogEntry {
  const out: DockLogEntry = {
    seq: e.seq,
    sinceBootMs: e.sinceBootMs,
    level: e.level,
    event: e.event,
    message: e.message,
  };
  if (e.generation !== undefined) out.generation = e.generation;
  if (e.jobId !== undefined) out.jobId = e.jobId;
  return out;
}

/** The last `maxBytes` of a stream as text, cut at UTF-8 boundaries. */
function tail(buffer: OutputBuffer, maxBytes: number): string {
  const from = Math.max(buffer.startOffset, buffer.endOffset - maxBytes);
  return utf8Inner(buffer.read(from, maxBytes).bytes);
}
