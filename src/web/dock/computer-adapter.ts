/**
 * The dock's view of the ComputerService. The dock watches one computer — the one launched
 * last, until the page can pick — and is pushed its typed events: lifecycle, job start, output
 * and exit, terminals, preview and log entries. Nothing is polled and no log text is read.
 */

import type { ComputerEvent } from '../../computer/events.js';
import type { Job } from '../../computer/jobs/job.js';
import type { ComputerManager } from '../../computer/manager.js';
import type { ComputerService } from '../../computer/service.js';
import type { Disposable } from '../../shared/disposable.js';
import { Emitter } from '../../shared/emitter.js';
import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { ComputerRef } from '../../tools/tool.js';
import { type ClientNames, callerLabel, computerLabel } from './client-names.js';
import { dockCheckpoint, dockJob, dockLog, watchedPreview, watchedTerminals } from './computer-views.js';
import type {
  DockCheckpointsState,
  DockComputerSummary,
  DockJob,
  DockLogEntry,
  DockPreview,
  DockProfile,
  DockStatus,
} from './protocol.js';
import type {
  ComputerChange,
  DockComputer,
  LaunchLinkBoot,
  LaunchLinkView,
  PreviewSource,
  TerminalSource,
} from './sources.js';

/** Options of {@link dockComputerFromService}. */
export interface ComputerAdapterOptions {
  logger: Logger;
  /** MCP sessions acting on each computer now, by computer key (the switcher shows the count). */
  sessions?: () => Map<string, number>;
  /** Bytes of each output stream a job message carries. Default 8 KiB. */
  tailBytes?: number;
  /** Client names of MCP callers (display only). */
  names?: ClientNames;
}

/** The computer the dock launches when it watches none yet. */
const DOCK_OWN: ComputerRef = { kind: 'private', owner: 'dock' };

/** A DockComputer over the ComputerService; `close` drops its subscription. */
export function dockComputerFromService(
  service: ComputerService,
  options: ComputerAdapterOptions,
): DockComputer & { close(): void; target(): ComputerRef } {
  return new ServiceAdapter(service, options);
}

class ServiceAdapter implements DockComputer {
  readonly terminals: TerminalSource;
  readonly preview: PreviewSource;
  private readonly changes: Emitter<ComputerChange>;
  private readonly terminalChanges: Emitter;
  private readonly previewChanges: Emitter<DockPreview>;
  private readonly tailBytes: number;
  private subscription: Disposable | null = null;
  /** Jobs whose output changed since the last notice (one notice per job and event-loop turn). */
  private readonly dirty = new Set<string>();
  private flushing = false;

  constructor(
    private readonly service: ComputerService,
    private readonly options: ComputerAdapterOptions,
  ) {
    this.tailBytes = options.tailBytes ?? 8192;
    const failed = (e: unknown) =>
      options.logger.warn('dock.listener_failed', { error: (e as Error).message });
    this.changes = new Emitter(failed);
    this.terminalChanges = new Emitter(failed);
    this.previewChanges = new Emitter(failed);
    this.terminals = this.terminalSource();
    this.preview = this.previewSource();
  }

  /** The watched computer, if any was launched. */
  private get watched(): ComputerManager | null {
    return this.service.watched();
  }

  /** The computer the dock acts on: the watched one, else the dock's own. */
  target(): ComputerRef {
    return this.watched ? this.service.refOf(this.watched.name) : DOCK_OWN;
  }

  private acting(): ComputerManager {
    return this.watched ?? this.service.byKey(this.service.keyOfRef(DOCK_OWN));
  }

  status(): DockStatus {
    const s = this.watched?.status();
    if (!s || s.lifecycle === 'none') {
      return {
        generation: null,
        profileId: null,
        profileName: null,
        lifecycle: 'none',
        bootError: null,
        bootMs: null,
        capabilities: [],
        message: 'No computer is running; pick a profile and launch one.',
      };
    }
    return {
      generation: s.generation,
      profileId: s.profileId,
      profileName: s.profileName,
      lifecycle: s.lifecycle,
      bootError: s.bootError,
      bootMs: s.bootMs,
      capabilities: s.capabilities,
      message: null,
    };
  }

  profiles(): DockProfile[] {
    return this.service.listProfiles().map((p) => ({
      id: p.id,
      name: p.name,
      description: p.description,
      available: p.available,
      unavailableReason: p.unavailableReason,
    }));
  }

  hostedByPage(profileId: string): boolean {
    return this.service.profiles.all().some((p) => p.id === profileId && p.backend === 'browser');
  }

  async launch(profileId: string, options: { keepWorkspace?: boolean } = {}): Promise<void> {
    this.acting().launch(profileId, undefined, options);
  }

  jobs(): DockJob[] {
    return (this.watched?.computer?.jobs.list() ?? []).map((job) => this.toDockJob(job));
  }

  job(jobId: string): DockJob | undefined {
    try {
      const found = this.watched?.resolveJob(jobId).job;
      return found ? this.toDockJob(found) : undefined;
    } catch {
      return undefined;
    }
  }

  recentLogs(limit: number): DockLogEntry[] {
    const all = this.watched?.readLogs({ limit: 100_000 }).entries ?? [];
    return all.slice(-limit).map(dockLog);
  }

  async launchLink(id: string): Promise<LaunchLinkView> {
    const store = this.service.launchLinks;
    if (!store) {
      throw new PaddockError(
        'UNSUPPORTED_CAPABILITY',
        'Launch links need the server database; start Paddock with a data directory.',
      );
    }
    const link = await store.get(id);
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
    const r = await this.acting().bootLaunchLink(id);
    return { lifecycle: r.lifecycle, bootError: r.bootError, jobId: r.jobId };
  }

  onChange(listener: (change: ComputerChange) => void): Disposable {
    return this.listen(this.changes, listener);
  }

  close(): void {
    this.changes.clear();
    this.terminalChanges.clear();
    this.previewChanges.clear();
    this.subscription?.dispose();
    this.subscription = null;
  }

  /**
   * Subscribes to one of this adapter's emitters; the adapter listens to the computer service
   * only while any of its emitters has a listener.
   */
  private listen<T>(emitter: Emitter<T>, listener: (value: T) => void): Disposable {
    const sub = emitter.on(listener);
    this.subscription ??= this.service.subscribe((event) => this.onEvent(event));
    return {
      dispose: () => {
        sub.dispose();
        if (this.changes.size + this.terminalChanges.size + this.previewChanges.size > 0) return;
        this.subscription?.dispose();
        this.subscription = null;
      },
    };
  }

  computers(): DockComputerSummary[] {
    const sessions = this.options.sessions?.() ?? new Map<string, number>();
    return this.service.list().map((c) => ({
      name: c.name,
      label: computerLabel(c.name, this.nameOf),
      profileId: c.profileId,
      lifecycle: c.lifecycle,
      generation: c.generation,
      sessions: sessions.get(c.name) ?? 0,
      idleMs: c.idleMs,
      workspace: c.workspace,
    }));
  }

  async checkpoints(): Promise<DockCheckpointsState | null> {
    const watched = this.watched;
    if (!watched) return null;
    const { store, key } = watched.checkpoints;
    const list = store.has(key) ? await store.list(key) : [];
    return { computer: watched.name, checkpoints: list.map(dockCheckpoint) };
  }

  launchedAt(): number | null {
    return this.watched?.computer?.launchedAt ?? null;
  }

  /** What a person calls a caller. */
  callerLabel(caller: string): string {
    return callerLabel(caller, this.nameOf);
  }

  private readonly nameOf = (caller: string): string | null => this.options.names?.nameOf(caller) ?? null;

  watching(): string | null {
    return this.service.watching();
  }

  watch(name: string): void {
    this.service.watch(name);
  }

  computerOf(generation: number): string | null {
    return this.service.computerOf(generation);
  }

  /** One event of any computer: only the watched computer's reach the page. */
  private onEvent(event: ComputerEvent): void {
    if (event.type === 'watch') {
      this.emit({ kind: 'watch' });
      this.notifyTerminals();
      return;
    }
    if (event.type === 'lifecycle') this.emit({ kind: 'computers' });
    if (event.computer !== this.watched?.name) return;
    switch (event.type) {
      case 'checkpoint':
        this.emit({ kind: 'checkpoints' });
        return;
      case 'lifecycle':
        this.emit({ kind: 'status' });
        this.notifyTerminals();
        return;
      case 'job.started':
      case 'job.exited':
      case 'job.ports':
        this.emit({ kind: 'job', jobId: event.jobId });
        return;
      case 'job.output':
        this.markDirty(event.jobId);
        return;
      case 'terminal':
        this.notifyTerminals();
        return;
      case 'preview':
        this.previewChanges.emit(event.state);
        return;
      case 'log':
        this.emit({ kind: 'log', entry: dockLog(event.entry) });
        return;
    }
  }

  /** Output arrives in many small pieces: one notice per job and event-loop turn. */
  private markDirty(jobId: string): void {
    this.dirty.add(jobId);
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      const ids = [...this.dirty];
      this.dirty.clear();
      for (const id of ids) this.emit({ kind: 'job', jobId: id });
    });
  }

  private emit(change: ComputerChange): void {
    this.changes.emit(change);
  }

  private notifyTerminals(): void {
    this.terminalChanges.emit();
  }

  private toDockJob(job: Job): DockJob {
    return dockJob(job, this.tailBytes, (j) => this.portsOf(j));
  }

  /** Ports a job of the watched computer listens on. */
  private portsOf(job: Job): number[] {
    const computer = this.watched?.computer;
    const pids = computer?.jobs.hostPids(job);
    return computer && pids ? computer.listening.portsOf(pids) : [];
  }

  /** The watched computer's terminals; follows the watch to another computer. */
  private terminalSource(): TerminalSource {
    return watchedTerminals(
      () => this.watched,
      (name) => this.service.byKey(name).terminals,
      (listener) => this.listen(this.terminalChanges, listener),
    );
  }

  /** The watched computer's preview pane. */
  private previewSource(): PreviewSource {
    return watchedPreview(
      () => this.watched,
      () => this.acting(),
      (listener) => this.listen(this.previewChanges, listener),
    );
  }
}
