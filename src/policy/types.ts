/** The four kinds of action a tool asks the policy about. */
export type PolicyAction =
  | { type: 'file.read'; path: string }
  | { type: 'file.write'; path: string }
  | { type: 'exec'; argv: string[]; cwd?: string }
  | { type: 'http'; method: string; url: string };

/** The outcome of a policy check: the rule that decided and why. */
export interface PolicyDecision {
  allow: boolean;
  /** The rule that decided, e.g. `files.write[0]=/workspace` or `default-deny`. */
  rule: string;
  reason: string;
  /**
   * The target the decision was finally made on: for paths checked with a PathResolver, the
   * canonical path after symlink resolution (operate on this one); for exec, the absolute
   * executable when known (given absolute, or found by an ExecResolver).
   */
  resolved?: string;
  /**
   * For an allowed `exec`: environment and leading arguments the executor must add (pinned
   * configuration, see exec-config.ts).
   */
  launch?: { env: Record<string, string>; args: string[] };
  /**
   * For `http` checked with a HostResolver: the vetted addresses of the host. Connect only to
   * one of these (pin them) so that a second DNS answer cannot point somewhere else.
   */
  addresses?: string[];
}

/**
 * Resolves guest paths with the guest's view of the filesystem (implemented inside the
 * computer by the guest agent, never on the host).
 */
export interface PathResolver {
  /** The canonical path with every symlink resolved, or `null` when it does not exist. */
  realpath(path: string): Promise<string | null>;
  /**
   * The target text of the symlink at `path`, without following it, or `null` when `path`
   * is not a symlink or does not exist. Needed to tell a dangling symlink from a missing
   * file: without it, checks of paths that do not exist yet fail closed (denied).
   */
  readlink?(path: string): Promise<string | null>;
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
  paths?: PathResolver;
  dns?: HostResolver;
  which?: ExecResolver;
}

/**
 * The policy: "may this action happen?". Deny by default, deny rules before allow
 * rules, rules compiled once at construction (an invalid rule throws there).
 */
export interface Sandbox {
  /** Lexical check only (no I/O): pure and fast. */
  check(action: PolicyAction): PolicyDecision;
  /**
   * Full check: lexical, then symlink resolution (paths) or DNS (http) through the given
   * resolvers. Returns the allowing decision or throws PaddockError `POLICY_DENIED`
   * naming the rule and the reason.
   */
  enforce(action: PolicyAction, options?: EnforceOptions): Promise<PolicyDecision>;
  /** Removes environment variables that must never be inherited from a caller. */
  sanitizeEnv(env: Record<string, string>): Record<string, string>;
}
