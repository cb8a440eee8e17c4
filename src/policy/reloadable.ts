/**
 * A policy that can be replaced while the server runs (paddock.yaml reloaded): every consumer
 * holds this one object, and each decision is made by the rules in force when it is asked. A
 * decision already made stands (a connection already open stays open); the next one uses the
 * new rules.
 */
import type { EnforceOptions, PolicyAction, PolicyDecision, Sandbox } from './types.js';

export class ReloadableSandbox implements Sandbox {
  constructor(private current: Sandbox) {}

  /** Puts `next` in force for every decision from now on. */
  replace(next: Sandbox): void {
    this.current = next;
  }

  check(action: PolicyAction): PolicyDecision {
    return this.current.check(action);
  }

  enforce(action: PolicyAction, options?: EnforceOptions): Promise<PolicyDecision> {
    return this.current.enforce(action, options);
  }

  fileScope(kind: 'read' | 'write') {
    return this.current.fileScope(kind);
  }

  sanitizeEnv(env: Record<string, string>): Record<string, string> {
    return this.current.sanitizeEnv(env);
  }
}
