/**
 * Typed events of the computer service: what changed, pushed to subscribers as it happens (the
 * dock subscribes instead of polling). Every event names the computer it is about.
 */
import { Emitter } from '../shared/emitter.js';
import type { Logger } from '../shared/logger.js';
import type { ComputerLogEntry } from './logs.js';
import type { PreviewState } from './preview/preview-state.js';

/** Lifecycle of a generation. */
export type Lifecycle = 'booting' | 'running' | 'error' | 'stopped';

/** One change in a computer. */
export type ComputerEvent =
  /** A generation was launched, booted, failed or stopped. */
  | {
      type: 'lifecycle';
      computer: string;
      generation: number;
      profileId: string;
      lifecycle: Lifecycle;
      bootError: string | null;
      /** Once booted: whether the generation took a warm sandbox or booted its own (null before). */
      bootSource: 'warm' | 'cold' | null;
    }
  /** A job started; `command` is its one-line summary. */
  | { type: 'job.started'; computer: string; generation: number; jobId: string; command: string }
  /** A job's stream received bytes. */
  | {
      type: 'job.output';
      computer: string;
      generation: number;
      jobId: string;
      fd: 'stdout' | 'stderr';
      bytes: number;
    }
  /** A job's root exited (its descendants may still run until cancel, timeout or relaunch). */
  | {
      type: 'job.exited';
      computer: string;
      generation: number;
      jobId: string;
      exitCode: number | null;
      signal: string | null;
      timedOut: boolean;
      canceled: boolean;
    }
  /** The ports a running service listens on changed. */
  | { type: 'job.ports'; computer: string; generation: number; jobId: string; ports: number[] }
  /** Terminals appeared or went, became ready, or the active one changed. */
  | { type: 'terminal'; computer: string; generation: number | null }
  /** The preview pane moved or observed something. */
  | { type: 'preview'; computer: string; state: PreviewState }
  /** An entry was added to the computer's log. */
  | { type: 'log'; computer: string; entry: ComputerLogEntry }
  /** The dock now watches this computer (a launch from anywhere, or the person's switch). */
  | { type: 'watch'; computer: string }
  /**
   * The computer's checkpoints changed: one was taken (`checkpointId`, retention may have dropped
   * older ones in the same step), or some were removed (null).
   */
  | { type: 'checkpoint'; computer: string; checkpointId: string | null };

/** The event types, for subscribers that want only some. */
export type ComputerEventType = ComputerEvent['type'];

/** The fan-out of computer events; a failing listener is logged and never stops the others. */
export type ComputerEvents = Emitter<ComputerEvent>;

/** Computer events whose failing listeners are logged. */
export function computerEvents(logger: Logger): ComputerEvents {
  return new Emitter<ComputerEvent>((e, event) =>
    logger.warn('computer.listener_failed', { event: event.type, error: (e as Error).message }),
  );
}
