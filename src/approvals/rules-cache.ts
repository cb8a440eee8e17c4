import type { Logger } from '../shared/logger.js';
import type { ApprovalStore } from './types.js';

/** How often the active rules are re-read when nothing else is said. */
export const RULES_REFRESH_MS = 5000;

/**
 * The active "always allow" rules as last read from the store (`agent` → tools), for tool
 * listings, which cannot wait for the store. Re-read on every local change and every
 * `refreshMs`, since another server sharing the store may add or remove a rule; a call's
 * admission reads the store itself.
 */
export class ApprovalRulesCache {
  private rules = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: ApprovalStore,
    private readonly logger: Logger,
  ) {}

  /** Reads the rules now, then every `refreshMs` until `stop`. */
  async start(refreshMs = RULES_REFRESH_MS): Promise<void> {
    await this.refresh();
    this.timer = setInterval(
      () =>
        void this.refresh().catch((e: unknown) =>
          this.logger.warn('approval.rules_refresh_failed', { error: (e as Error).message }),
        ),
      refreshMs,
    );
    this.timer.unref();
  }

  /** Re-reads the active rules from the store. */
  async refresh(): Promise<void> {
    const rules = new Map<string, Set<string>>();
    for (const rule of await this.store.rules(false)) {
      const tools = rules.get(rule.agent) ?? new Set<string>();
      tools.add(rule.tool);
      rules.set(rule.agent, tools);
    }
    this.rules = rules;
  }

  /** Whether a rule (as last read) lets `agent` call `tool` without asking. */
  allows(agent: string, tool: string): boolean {
    return this.rules.get(agent)?.has(tool) === true;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
