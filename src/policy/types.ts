import type { FileScope } from '../guest/path-scope.js';

/** The four kinds of action a tool asks the policy about. */
export type PolicyAction =
  | { type: 'file.read'; path: string }
  | { type: 'file.write'; path: string }
  | { type: 'exec'; argv: string[]; cwd?: string }
  | { type: 'http'; method: string; url: string }
  /** A TCP connection of a computer to host:port (egress; any protocol). */
  | { type: 'tcp'; host: string; port: number };

/** The outcome of a policy check: the rule that decided and why. */
export interface PolicyDecision {
  allow: boolean;
  /** The rule that decided, e.g. `files.write[0]=/workspace` or `default-deny`. */
  rule: string;
  reason: string;
  /**
   * For exec, the absolute executable the decision was made on, when known (given absolute, or
   * found by an ExecResolver).
   */
  resolved?: string;
  /**
   * For an allowed `exec`: environment and leading arguments the executor must add (pinned
   * configuration, see exec-config.ts).
   */
  launch?: { env: Record<string, string>; args: string[] };
  /**
   * For an allowed `exec`: what the kernel lets the program and everything it starts do when the
   * `shell` built-in runs it — execute only the program itself and `helpers` (with the loaders
   * and interpreters they need), write only beneath `write`. See confine.ts.
   */
  confine?: { helpers: string[]; write: string[] };
  /**
   * For `http` checked with a HostResolver: the vetted addresses of the host. Connect only to
   * one of these (pin them) so that a second DNS answer cannot point somewhere else.
   */
  addresses?: string[];
  /**
   * A refused `tcp` action that `policy.http.ask` covers: a person may allow it while the
   * connection waits (its `rule` names the ask entry).
   */
  ask?: boolean;
}

/** A destination a person allowed (`host:port`, one host), and the label its decisions carry. */
export interface Grant {
  entry: string;
  label: string;
}

/** Resolves host names to IP addresses (the egress side's DNS). */
export interface HostResolver {
  lookup(hostname: string): Promise<string[]>;
}

/** Finds executables the way `execvp` would, in the computer's view of the filesystem. */
export interface ExecResolver {
  /**
   * The first `<dir>/<name>` in `searchPath` that exists and is executable, or `null`.
   * Implementations must not follow the caller's `PATH`.
   */
  which(name: string, searchPath: readonly string[]): Promise<string | null>;
}

/** Extra resolvers for checks that need the world's state. */
export interface EnforceOptions {
  dns?: HostResolver;
  which?: ExecResolver;
  /** For `tcp`: destinations a person allowed, decided like `tcp.allow` entries (deny rules first). */
  grants?: readonly Grant[];
}

/**
 * The policy: "may this action happen?". Deny by default, deny rules before allow
 * rules, rules compiled once at construction (an invalid rule throws there).
 */
export interface Sandbox {
  /** Lexical check only (no I/O): pure and fast. */
  check(action: PolicyAction): PolicyDecision;
  /**
   * Full check: lexical, then executable lookup (exec) or DNS (http) through the given
   * resolvers. Returns the allowing decision or throws PaddockError `POLICY_DENIED`
   * naming the rule and the reason.
   */
  enforce(action: PolicyAction, options?: EnforceOptions): Promise<PolicyDecision>;
  /**
   * The file roots of `kind` as data, for the guest to judge every symlink it follows and the
   * object it opens (guest/path-scope.ts). Symlinks can only narrow the lexical answer.
   */
  fileScope(kind: 'read' | 'write'): FileScope;
  /** Removes environment variables that must never be inherited from a caller. */
  sanitizeEnv(env: Record<string, string>): Record<string, string>;
}
