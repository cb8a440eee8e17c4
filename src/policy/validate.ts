import type { PolicyConfig } from '../config/schema.js';
import type { PaddockError } from '../shared/errors.js';
import { compileAskRules, compileHostRules, compileTcpRules } from './domain-rules.js';
import { compileExecRules } from './exec-rules.js';
import { compileRoots } from './path-rules.js';
import { compileStaticHosts } from './static-hosts.js';

/**
 * Every problem with the rules of a `policy` config section, as `path: message` lines
 * (`policy.http.allow.0: "*.com" would match every domain under a public suffix; …`), in
 * the format the config loader prints. Empty when `createWhitelistSandbox(config)` would
 * succeed. Lets a config load report all bad rules at once instead of the first.
 */
export function listPolicyProblems(config: PolicyConfig): string[] {
  const problems: PaddockError[] = [];
  compileRoots('files.read', config.files.read, problems);
  compileRoots('files.deny', config.files.deny, problems);
  const writeRoots = compileRoots('files.write', config.files.write, problems);
  compileExecRules(config.exec, writeRoots, problems);
  compileHostRules(config.http, problems);
  compileStaticHosts(config.http.hosts ?? {}, problems);
  compileTcpRules(config.tcp?.allow ?? [], problems);
  compileAskRules(config.http.ask ?? [], problems);
  return problems.map((e) => `${String(e.details.path)}: ${String(e.details.problem)}`);
}
