/**
 * What the dock shows of a computer, made from the computer service's objects: a job's row, a
 * checkpoint, a log entry, and the terminals and preview of whichever computer the dock watches now.
 */

import type { CheckpointInfo } from '../../computer/checkpoints/types.js';
import { listeningPortsOf } from '../../computer/generation/services.js';
import type { Job } from '../../computer/jobs/job.js';
import type { ComputerLogEntry } from '../../computer/logs.js';
import type { ComputerManager } from '../../computer/manager.js';
import type { TerminalService } from '../../computer/terminals/terminal-service.js';
import type { Disposable } from '../../shared/disposable.js';
import { PaddockError } from '../../shared/errors.js';
import type { DockCheckpoint, DockJob, DockLogEntry, DockPreview, DockTerminal } from './protocol.js';
import type { PreviewSource, TerminalChunk, TerminalSource } from './sources.js';

/** A checkpoint as the timeline shows it (its time in epoch milliseconds). */
export function dockCheckpoint(c: CheckpointInfo): DockCheckpoint {
  return {
    id: c.id,
    label: c.label,
    createdAt: Date.parse(c.createdAt),
    addedBytes: c.addedBytes,
    files: c.files,
    bytes: c.bytes,
    trigger: c.trigger,
    generation: c.generation,
    before: c.before,
  };
}

/** A job's row: its state, the last `tailBytes` of each stream and the ports it listens on. */
export function dockJob(job: Job, tailBytes: number, portsOf: (job: Job) => number[]): DockJob {
  let state: DockJob['state'] = 'running';
  if (job.terminationObserved) {
    if (job.canceled) state = 'canceled';
    else if (job.timedOut) state = 'timed_out';
    else if (job.signal) state = 'killed';
    else state = job.exitCode === 0 ? 'exited' : 'failed';
  }
  const output = job.tail(tailBytes);
  return {
    jobId: job.id,
    generation: job.generation,
    command: job.command,
    state,
    exitCode: job.exitCode,
    signal: job.signal,
    durationMs: job.durationMs,
    stdoutTail: output.stdout,
    stderrTail: output.stderr,
    outputBytes: output.outputBytes,
    background: job.background,
    ports: job.terminationObserved && !job.background ? [] : portsOf(job),
  };
}

/** A log entry as the page gets it. */
export function dockLog(e: ComputerLogEntry): DockLogEntry {
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

/**
 * The terminals of the watched computer, following the watch to another computer; `terminalsOf`
 * gives a computer's terminals by name (the person's typing counts as the computer's activity).
 */
export function watchedTerminals(
  watched: () => ComputerManager | null,
  terminalsOf: (name: string) => TerminalService,
  onChange: (listener: () => void) => Disposable,
): TerminalSource {
  const current = () => {
    const w = watched();
    if (!w) throw new PaddockError('NOT_RUNNING', 'No computer is running; launch one first.');
    return terminalsOf(w.name);
  };
  return {
    list: (): DockTerminal[] => watched()?.terminals.list() ?? [],
    write: (id, data, who = 'dock') => current().write(id, data, { source: 'person', who }),
    resize: (id, cols, rows) => current().resize(id, cols, rows),
    activate: (id) => current().activate(id),
    hold: (id, who) => current().hold(id, who),
    release: (id, who) => current().release(id, who),
    journal: (id, source) => current().journal(id, source ? { source } : {}),
    asciicast: (id) => current().asciicast(id),
    subscribe: (id, from, onData: (chunk: TerminalChunk) => void) => current().subscribe(id, from, onData),
    onChange,
  };
}

/** The preview pane of the watched computer; navigation acts on `acting()`. */
export function watchedPreview(
  watched: () => ComputerManager | null,
  acting: () => ComputerManager,
  onChange: (listener: (preview: DockPreview) => void) => Disposable,
): PreviewSource {
  return {
    state: () =>
      watched()?.preview.state() ?? {
        path: null,
        url: null,
        port: null,
        status: 'idle',
        message: null,
        navigation: 0,
      },
    navigate: (path, port) => acting().preview.navigate(path, port),
    ports: () => listeningPortsOf(watched()?.computer ?? null),
    onChange,
  };
}
