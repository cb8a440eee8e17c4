import { Emitter } from '../shared/emitter.js';
import type { Logger } from '../shared/logger.js';
import type { AgentRun } from './types.js';

/** What the dock (or any listener) hears about agents, as it happens. */
export type RunEvent =
  | { type: 'run.started'; run: AgentRun }
  | {
      type: 'run.turn';
      runId: string;
      agent: string;
      turn: number;
      inputTokens: number;
      outputTokens: number;
    }
  | {
      type: 'run.tool_call';
      runId: string;
      agent: string;
      tool: string;
      invocationId: string;
      ok: boolean;
      errorCode?: string;
    }
  | { type: 'run.finished'; run: AgentRun }
  /** The run waits for a person to approve a call (`approvalId`), or waits no more (null). */
  | { type: 'run.waiting'; runId: string; agent: string; approvalId: string | null; tool?: string }
  | {
      type: 'schedule.tick';
      agent: string;
      schedule: string;
      /** Epoch ms of the tick. */
      scheduledAt: number;
      action: 'started' | 'skipped' | 'catch-up';
      reason?: string;
      runId?: string;
    }
  | { type: 'agents.reloaded'; agents: string[]; errors: string[] };

/** The fan-out of run events; a listener that throws is logged and never disturbs a run. */
export type RunEvents = Emitter<RunEvent>;

/** Run events whose failing listeners are logged. */
export function runEvents(logger: Logger): RunEvents {
  return new Emitter<RunEvent>((e, event) =>
    logger.warn('agent.listener_failed', { event: event.type, error: (e as Error).message }),
  );
}
