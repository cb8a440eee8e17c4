/**
 * The ports a computer's connections could be allowed on: every port a rule of `http.allow`,
 * `tcp.allow` or `http.ask` names (a rule without one means 80 and 443), and the ports of the
 * profiles' `network.allow`. A computer's handed-out names listen on these, so a connection on
 * any other port is refused by the computer itself (nothing listens there).
 */
import type { PolicyConfig } from '../config/schema.js';
import { compileAskRules, compileHostRules, compileTcpRules, type HostRule } from './domain-rules.js';

/** The ports rules name (sorted, without duplicates); rules that do not compile are skipped. */
export function rulePorts(config: PolicyConfig, extraAllow: readonly (readonly string[])[] = []): number[] {
  const rules: HostRule[] = [];
  const ignore: never[] = [];
  const collect = <T>(compile: () => T, pick: (compiled: T) => HostRule[]) => {
    try {
      rules.push(...pick(compile()));
    } catch {
      // a bad rule fails the config load elsewhere
    }
  };
  collect(
    () => compileHostRules({ allow: config.http.allow, deny: [] }, ignore),
    (r) => r.allow,
  );
  collect(
    () => compileTcpRules(config.tcp?.allow ?? [], ignore),
    (r) => r,
  );
  collect(
    () => compileAskRules(config.http.ask ?? [], ignore),
    (r) => (r === 'unknown' ? [] : r),
  );
  for (const allow of extraAllow) {
    collect(
      () => compileHostRules({ allow, deny: [] }, ignore),
      (r) => r.allow,
    );
  }
  const ports = new Set<number>([80, 443]);
  for (const rule of rules) if (rule.port !== null) ports.add(rule.port);
  return [...ports].sort((a, b) => a - b);
}
