/**
 * A property test of the `tcp` action: random rule sets and random destinations (names in any
 * case with a trailing dot, subdomains that look like suffixes, IP literals in other notations)
 * decided by the real whitelist against a small reference model written from the docs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { random } from '../../helpers/fuzz.js';
import { sandboxFor } from './helpers.js';

type Rule = { host: string; port: number | null };

const LABELS = ['a', 'b', 'db', 'git', 'x-y'];
const SUFFIXES = ['example.test', 'corp.internal'];
const PORTS = [22, 80, 443, 5432, 8443];

function pick<T>(rnd: () => number, list: readonly T[]): T {
  return list[Math.floor(rnd() * list.length)]!;
}

function name(rnd: () => number): string {
  const depth = Math.floor(rnd() * 3);
  const labels = Array.from({ length: depth }, () => pick(rnd, LABELS));
  return [...labels, pick(rnd, SUFFIXES)].join('.');
}

function rule(rnd: () => number, portRequired: boolean): Rule {
  const wildcard = rnd() < 0.3;
  const host = wildcard ? `*.${name(rnd)}` : rnd() < 0.1 ? '10.1.2.3' : name(rnd);
  const port = portRequired || rnd() < 0.4 ? pick(rnd, PORTS) : null;
  return { host, port };
}

const text = (r: Rule) => (r.port === null ? r.host : `${r.host}:${r.port}`);

function names(r: Rule, host: string): boolean {
  if (r.host.startsWith('*.')) return host.endsWith(`.${r.host.slice(2)}`);
  return r.host === host;
}

/** The reference: deny rules first, then http.allow (80/443 without a port) or tcp.allow, then ask. */
function reference(
  rules: { allow: Rule[]; deny: Rule[]; tcp: Rule[]; ask: Rule[] },
  host: string,
  port: number,
): 'allow' | 'ask' | 'deny' {
  const bare = host.toLowerCase().replace(/\.$/, '');
  const ip = /^\d+\.\d+\.\d+\.\d+$/.test(bare);
  if (rules.deny.some((r) => names(r, bare) && (r.port === null || r.port === port))) return 'deny';
  const httpCovers = (r: Rule) => (r.port === null ? port === 80 || port === 443 : r.port === port);
  const allowed = [...rules.allow.filter((r) => httpCovers(r)), ...rules.tcp.filter((r) => r.port === port)];
  if (ip) return allowed.some((r) => r.host === bare) ? 'allow' : 'deny';
  if (allowed.some((r) => names(r, bare))) return 'allow';
  if (rules.ask.some((r) => names(r, bare) && httpCovers(r))) return 'ask';
  return 'deny';
}

function target(rnd: () => number): { host: string; port: number } {
  const roll = rnd();
  let host: string;
  if (roll < 0.1) host = '10.1.2.3';
  else if (roll < 0.15)
    host = pick(rnd, SUFFIXES); // a bare suffix is not its subdomain
  else if (roll < 0.2)
    host = `evil${pick(rnd, SUFFIXES)}`; // a lookalike without the dot
  else host = name(rnd);
  if (rnd() < 0.2) host = host.toUpperCase();
  if (rnd() < 0.2) host = `${host}.`;
  return { host, port: pick(rnd, PORTS) };
}

describe('the tcp action against a reference model', () => {
  it('decides 3,000 random destinations under random rule sets exactly as the model does', () => {
    const seed = Number(process.env.PADDOCK_FUZZ_SEED ?? 31);
    const rnd = random(seed);
    let checked = 0;
    for (let set = 0; set < 60; set++) {
      const rules = {
        allow: Array.from({ length: Math.floor(rnd() * 4) }, () => rule(rnd, false)),
        deny: Array.from({ length: Math.floor(rnd() * 2) }, () => rule(rnd, false)),
        tcp: Array.from({ length: Math.floor(rnd() * 3) }, () => rule(rnd, true)),
        ask: Array.from({ length: Math.floor(rnd() * 2) }, () => rule(rnd, false)).filter(
          (r) => r.host !== '10.1.2.3',
        ),
      };
      const sandbox = sandboxFor({
        http: { allow: rules.allow.map(text), deny: rules.deny.map(text), ask: rules.ask.map(text) },
        tcp: { allow: rules.tcp.map(text) },
      });
      for (let i = 0; i < 50; i++) {
        const t = target(rnd);
        const got = sandbox.check({ type: 'tcp', host: t.host, port: t.port });
        const verdict = got.allow ? 'allow' : got.ask ? 'ask' : 'deny';
        assert.equal(
          verdict,
          reference(rules, t.host, t.port),
          `seed ${seed}: ${t.host}:${t.port} under ${JSON.stringify(rules)} (${got.rule}: ${got.reason})`,
        );
        checked += 1;
      }
    }
    assert.equal(checked, 3000);
  });
});
