/**
 * The policy module: the whitelist Sandbox and its helpers. Other modules import from here
 * (or `types.js` for the interfaces alone).
 */
export { type Confinement, intersectConfinements, NO_CONFINEMENT } from './confine.js';
export { BUILTIN_RULES, policyDeniedError } from './decision.js';
export { createSystemHostResolver, type SystemHostResolverOptions } from './dns.js';
export {
  DANGEROUS_ENV_PREFIXES,
  DANGEROUS_ENV_VARS,
  HARMLESS_GIT_VARS,
  isDangerousEnvName,
  sanitizeEnv,
} from './env.js';
export { decideAsEnforced, explainDecision, parsePolicyTarget } from './explain.js';
export { type IpInfo, inspectAddress } from './ip.js';
export { type GuestPath, MAX_PATH_CHARS, parseGuestPath } from './path-rules.js';
export { rulePorts } from './ports.js';
export { compileStaticHosts, type StaticHosts } from './static-hosts.js';
export type * from './types.js';
export { listPolicyProblems } from './validate.js';
export {
  createWhitelistSandbox,
  type WhitelistSandbox,
  type WhitelistSandboxOptions,
} from './whitelist-sandbox.js';
