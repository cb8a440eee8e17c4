import { isIP } from 'node:net';
import type * as IpAddr from 'ipaddr.js';
import { requireCjs } from '../shared/require-cjs.js';

const ipaddr = requireCjs('ipaddr.js') as typeof IpAddr;

/** Well-known cloud metadata endpoints (named in denials so the reason is obvious). */
const METADATA_ADDRESSES: ReadonlySet<string> = new Set([
  '169.254.169.254',
  'fd00:ec2::254',
  '100.100.100.200',
]);

const RANGE_NAMES: Readonly<Record<string, string>> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT',
  private: 'private',
  uniqueLocal: 'unique local (private)',
  reserved: 'reserved',
  benchmarking: 'benchmarking',
  ipv4Mapped: 'IPv4-mapped',
  rfc6145: 'IPv4-translated',
  rfc6052: 'NAT64',
  '6to4': '6to4',
  teredo: 'Teredo',
};

/** One IP address, canonical, with the range it falls in. */
export interface IpInfo {
  /** Canonical text: dotted quad, or RFC 5952 IPv6; IPv4-mapped IPv6 becomes its IPv4. */
  address: string;
  version: 4 | 6;
  /** ipaddr.js range name (`unicast`, `loopback`, `private`, `linkLocal` …). */
  range: string;
  /** Anything but public unicast: loopback, private, link-local, CGNAT, metadata, multicast … */
  forbidden: boolean;
  /** Human name of the range, e.g. `loopback`, `cloud metadata`. */
  kind: string;
}

/** Inspects a bare IP address (no brackets, no port); `null` when it is not one. */
export function inspectAddress(text: string): IpInfo | null {
  const version = isIP(text);
  if (version === 0) return null;
  let addr: IpAddr.IPv4 | IpAddr.IPv6 = ipaddr.parse(text);
  if (addr.kind() === 'ipv6' && (addr as IpAddr.IPv6).isIPv4MappedAddress()) {
    addr = (addr as IpAddr.IPv6).toIPv4Address();
  }
  const address = addr.kind() === 'ipv4' ? addr.toString() : (addr as IpAddr.IPv6).toRFC5952String();
  const range = addr.range();
  const metadata = METADATA_ADDRESSES.has(address);
  return {
    address,
    version: addr.kind() === 'ipv4' ? 4 : 6,
    range,
    forbidden: range !== 'unicast',
    kind: metadata ? 'cloud metadata' : (RANGE_NAMES[range] ?? range),
  };
}

/**
 * The IP a WHATWG URL hostname denotes (`127.0.0.1`, `[::1]`), or `null` for a name. The URL
 * parser has already turned decimal, octal, hex and short IPv4 forms into a dotted quad.
 */
export function ipFromHostname(hostname: string): IpInfo | null {
  if (hostname.startsWith('[') && hostname.endsWith(']')) return inspectAddress(hostname.slice(1, -1));
  return isIP(hostname) === 4 ? inspectAddress(hostname) : null;
}
