import type { PaddockError } from '../shared/errors.js';
import { BUILTIN_RULES, compileEach, deny, invalidRule, ruleLabel } from './decision.js';
import { type IpInfo, ipFromHostname } from './ip.js';
import type { PolicyDecision } from './types.js';

/**
 * Two-label public suffixes under which a wildcard would cover unrelated owners. Not the
 * whole Public Suffix List: single-label suffixes (`com`, `de`, `io` …) are refused anyway,
 * and this covers the common second-level registries.
 */
const COMMON_PUBLIC_SUFFIXES: ReadonlySet<string> = new Set(
  [
    'co.uk org.uk ac.uk gov.uk me.uk ltd.uk plc.uk net.uk',
    'com.au net.au org.au edu.au gov.au',
    'co.jp ne.jp or.jp ac.jp go.jp',
    'co.nz org.nz net.nz co.za org.za co.in net.in org.in co.kr or.kr co.il org.il',
    'com.br net.br org.br com.cn net.cn org.cn com.tw com.hk com.sg com.my com.mx com.ar',
    'com.tr com.ua com.pl com.ru com.es com.sa com.eg com.ng com.pk com.ph com.vn com.co',
    'github.io gitlab.io pages.dev workers.dev vercel.app netlify.app herokuapp.com',
    'appspot.com azurewebsites.net cloudfront.net amazonaws.com blogspot.com',
  ]
    .join(' ')
    .split(' '),
);

/** A compiled `http.allow` / `http.deny` entry. */
export interface HostRule {
  label: string;
  index: number;
  /** `domain` exact name, `wildcard` subdomains of `host`, `ip` exact address, `localhost`. */
  kind: 'domain' | 'wildcard' | 'ip' | 'localhost';
  /** Normalised host (for `wildcard`: the suffix without `*.`; for `ip`: canonical address). */
  host: string;
  /** The port the rule names, or `null` (allow: the scheme's default port; deny: any port). */
  port: number | null;
}

/** The compiled domain rules. */
export interface HostRules {
  allow: HostRule[];
  deny: HostRule[];
}

/** Normalises a host the way a URL's hostname is normalised (lower case, punycode, IPv4 forms). */
export function normaliseHost(host: string): string | null {
  try {
    const name = new URL(`http://${host}/`).hostname;
    return name.endsWith('.') ? name.slice(0, -1) : name;
  } catch {
    return null;
  }
}

/** Whether `host` is a syntactically valid DNS name (labels of 1…63, at most 253 characters). */
export function validName(host: string): boolean {
  return (
    host.length > 0 && host.length <= 253 && host.split('.').every((l) => l.length > 0 && l.length <= 63)
  );
}

/** The rule lists written as host patterns. */
export type HostRuleList = 'http.allow' | 'http.deny' | 'http.ask' | 'tcp.allow' | 'grant';

/**
 * Compiles one host pattern of `list` (`api.example.com`, `*.example.com:8443`, an IP
 * address); throws INVALID_ARGUMENT naming it. A `tcp.allow` or `grant` entry must name its
 * port: no protocol gives it a default. A `grant` (a person's answer) names one host, no wildcard.
 */
export function compileHostRule(list: HostRuleList, index: number, text: string, label?: string): HostRule {
  const rule = compilePattern(list, index, text, label);
  if ((list === 'tcp.allow' || list === 'grant') && rule.port === null) {
    throw invalidRule(rule.label, 'a TCP rule names its port (e.g. git.example.test:22)');
  }
  if (list === 'grant' && rule.kind === 'wildcard') {
    throw invalidRule(rule.label, 'an answer allows one host, not a wildcard');
  }
  return rule;
}

function compilePattern(list: HostRuleList, index: number, text: string, given?: string): HostRule {
  const label = given ?? ruleLabel(list, index, text);
  if (text.length === 0) throw invalidRule(label, 'the rule is empty');
  if (/[\s/@?#\\]/.test(text) || text.includes('://')) {
    throw invalidRule(
      label,
      'give a host name with an optional :port (e.g. api.example.com:8443), not a URL',
    );
  }
  let host = text;
  let portText: string | undefined;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    const after = close === -1 ? '!' : text.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) {
      throw invalidRule(label, 'a bracketed IPv6 address must end with "]"');
    }
    host = text.slice(0, close + 1);
    portText = after === '' ? undefined : after.slice(1);
  } else if (text.split(':').length === 2) {
    [host, portText] = text.split(':') as [string, string];
  } else if (text.includes(':')) {
    host = `[${text}]`;
  }
  let port: number | null = null;
  if (portText !== undefined) {
    port = /^\d{1,5}$/.test(portText) ? Number(portText) : 0;
    if (port < 1 || port > 65535) throw invalidRule(label, 'the port must be a number from 1 to 65535');
  }
  const base = { label, index, port };
  if (host === '*' || host === '*.*') {
    throw invalidRule(label, `"${host}" would allow every host; list the hosts you trust`);
  }
  if (host.includes('*')) {
    if (!host.startsWith('*.') || host.slice(2).includes('*')) {
      throw invalidRule(label, 'the only wildcard form is a leading "*." (e.g. *.example.com)');
    }
    const suffix = normaliseHost(host.slice(2));
    if (suffix === null || !validName(suffix) || ipFromHostname(suffix)) {
      throw invalidRule(label, 'the part after "*." must be a domain name');
    }
    if (!suffix.includes('.') || COMMON_PUBLIC_SUFFIXES.has(suffix)) {
      throw invalidRule(
        label,
        `"*.${suffix}" would match every domain under a public suffix; name a domain you trust`,
      );
    }
    return { ...base, kind: 'wildcard', host: suffix };
  }
  const name = normaliseHost(host);
  if (name === null) throw invalidRule(label, 'not a valid host name or IP address');
  const ip = ipFromHostname(name);
  if (ip) return { ...base, kind: 'ip', host: ip.address };
  if (!validName(name)) throw invalidRule(label, 'not a valid host name');
  return { ...base, kind: name === 'localhost' ? 'localhost' : 'domain', host: name };
}

/**
 * Compiles `http.allow` and `http.deny`; throws INVALID_ARGUMENT naming a bad rule (or
 * collects it in `problems`, see compileEach).
 */
export function compileHostRules(
  config: { allow: readonly string[]; deny: readonly string[] },
  problems?: PaddockError[],
): HostRules {
  return {
    allow: compileEach(config.allow, (text, i) => compileHostRule('http.allow', i, text), problems),
    deny: compileEach(config.deny, (text, i) => compileHostRule('http.deny', i, text), problems),
  };
}

/** `policy.http.ask` compiled: `unknown` (every name no rule decides) or host patterns. */
export type AskRules = 'unknown' | HostRule[];

/** Compiles `http.ask` like `http.allow` (or `unknown`); throws or collects like compileHostRules. */
export function compileAskRules(config: 'unknown' | readonly string[], problems?: PaddockError[]): AskRules {
  if (config === 'unknown') return 'unknown';
  return compileEach(config, (text, i) => compileHostRule('http.ask', i, text), problems);
}

/** Compiles `tcp.allow` (every entry names its port); throws or collects like compileHostRules. */
export function compileTcpRules(allow: readonly string[], problems?: PaddockError[]): HostRule[] {
  return compileEach(allow, (text, i) => compileHostRule('tcp.allow', i, text), problems);
}

/** Whether `rule` names `host` (normalised name or canonical IP); ports are checked apart. */
export function namesHost(rule: HostRule, host: string): boolean {
  if (rule.kind === 'wildcard') {
    return (
      host.length > rule.host.length + 1 &&
      host.endsWith(rule.host) &&
      host[host.length - rule.host.length - 1] === '.'
    );
  }
  return rule.host === host;
}

/** Whether `rule` covers `port` (`null` port: allow rules mean the default port, deny rules any). */
export function coversPort(rule: HostRule, port: number, defaultPort: number, isDeny: boolean): boolean {
  if (rule.port === null) return isDeny || port === defaultPort;
  return rule.port === port;
}

/** A request target taken apart: host (normalised), port, and its IP when the host is one. */
export interface HttpTarget {
  host: string;
  port: number;
  defaultPort: number;
  ip: IpInfo | null;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Parses and vets the URL of an `http` action; a denial when it is malformed or refused outright. */
export function parseHttpTarget(method: unknown, url: unknown): HttpTarget | PolicyDecision {
  if (typeof method !== 'string' || !TOKEN.test(method)) {
    return deny(BUILTIN_RULES.urlSyntax, 'the HTTP method is not a valid token');
  }
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    return deny(BUILTIN_RULES.urlSyntax, 'the URL does not parse; give an absolute http:// or https:// URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return deny(
      BUILTIN_RULES.urlScheme,
      `the scheme ${parsed.protocol.slice(0, -1)} is not allowed; use http or https`,
    );
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return deny(
      BUILTIN_RULES.urlUserinfo,
      'the URL carries a user name or password; send credentials in a header',
    );
  }
  const host = parsed.hostname.endsWith('.') ? parsed.hostname.slice(0, -1) : parsed.hostname;
  const ip = ipFromHostname(host);
  if (!ip && !validName(host)) {
    return deny(BUILTIN_RULES.urlSyntax, 'the URL has an empty or malformed host name');
  }
  const defaultPort = parsed.protocol === 'https:' ? 443 : 80;
  const port = parsed.port === '' ? defaultPort : Number(parsed.port);
  if (port === 0) return deny(BUILTIN_RULES.urlSyntax, 'port 0 is not a valid destination');
  return { host: ip ? ip.address : host, port, defaultPort, ip };
}

/** The lowest-index rule of `rules` that names `host` and covers `port`. */
export function findHostRule(
  rules: readonly HostRule[],
  target: { host: string; port: number; defaultPort: number },
  isDeny: boolean,
): HostRule | undefined {
  for (const rule of rules) {
    if (namesHost(rule, target.host) && coversPort(rule, target.port, target.defaultPort, isDeny)) {
      return rule;
    }
  }
  return undefined;
}
