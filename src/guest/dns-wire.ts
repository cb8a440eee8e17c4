/**
 * The DNS messages the guest's resolver reads and writes (RFC 1035): one question in, one
 * answer out. Only what a stub resolver sends is understood (a standard query with a single
 * question, optionally an EDNS OPT record, which is ignored); anything else is answered
 * FORMERR or NOTIMP. Pure functions over buffers, so they can be tested without a socket.
 */

/** Record types the resolver answers. */
export const DnsType = { A: 1, PTR: 12, AAAA: 28 } as const;

/** Response codes. */
export const Rcode = { noError: 0, formErr: 1, servFail: 2, nxDomain: 3, notImp: 4, refused: 5 } as const;

/** A parsed query: its id, flags, the question, and where the question ends. */
export interface DnsQuery {
  id: number;
  /** The recursion-desired bit, echoed in the answer. */
  rd: boolean;
  /** Lower-case name without the trailing dot ('' for the root). */
  name: string;
  type: number;
  qclass: number;
  /** The question section exactly as sent (copied into the answer). */
  question: Buffer;
}

/** Longest name accepted (RFC 1035: 255 octets on the wire). */
const MAX_NAME_OCTETS = 255;

/**
 * Parses a query; null when the message is not a standard query with exactly one question
 * (the caller answers FORMERR/NOTIMP from the header when it can, or drops it).
 */
export function parseQuery(message: Buffer): DnsQuery | null {
  if (message.length < 12) return null;
  const flags = message.readUInt16BE(2);
  const qr = flags >> 15;
  const opcode = (flags >> 11) & 0x0f;
  if (qr !== 0 || opcode !== 0 || message.readUInt16BE(4) !== 1 || message.readUInt16BE(6) !== 0) {
    return null;
  }
  const labels: string[] = [];
  let at = 12;
  let octets = 0;
  for (;;) {
    const length = message[at];
    if (length === undefined || length > 63) return null; // compression is never used in a question
    at += 1;
    octets += length + 1;
    if (octets > MAX_NAME_OCTETS) return null;
    if (length === 0) break;
    if (at + length > message.length) return null;
    labels.push(message.toString('latin1', at, at + length).toLowerCase());
    at += length;
  }
  if (at + 4 > message.length) return null;
  const type = message.readUInt16BE(at);
  const qclass = message.readUInt16BE(at + 2);
  at += 4;
  return {
    id: message.readUInt16BE(0),
    rd: (flags & 0x0100) !== 0,
    name: labels.join('.'),
    type,
    qclass,
    question: message.subarray(12, at),
  };
}

/** The id and RD bit of a message too malformed to parse, for a FORMERR answer (null: drop it). */
export function headerOf(message: Buffer): { id: number; rd: boolean } | null {
  if (message.length < 12 || message.readUInt16BE(2) >> 15 !== 0) return null;
  return { id: message.readUInt16BE(0), rd: (message.readUInt16BE(2) & 0x0100) !== 0 };
}

/** An answer record: an IPv4 address (A) or a name (PTR). */
export type DnsAnswer =
  | { type: 'A'; address: string; ttl: number }
  | { type: 'PTR'; name: string; ttl: number };

function encodeName(name: string): Buffer {
  const parts = name === '' ? [] : name.split('.');
  return Buffer.concat([
    ...parts.map((p) => Buffer.concat([Buffer.from([p.length]), Buffer.from(p, 'latin1')])),
    Buffer.from([0]),
  ]);
}

/**
 * The response to `query` (or to a bare header when the question could not be parsed):
 * authoritative, recursion available, with `answers` pointing at the question's name.
 */
export function buildResponse(
  query: { id: number; rd: boolean; question?: Buffer },
  rcode: number,
  answers: readonly DnsAnswer[] = [],
): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.id, 0);
  // QR=1, opcode 0, AA=1, TC=0, RD as asked, RA=1
  header.writeUInt16BE(0x8000 | 0x0400 | (query.rd ? 0x0100 : 0) | 0x0080 | (rcode & 0x0f), 2);
  header.writeUInt16BE(query.question ? 1 : 0, 4);
  header.writeUInt16BE(answers.length, 6);
  const records = answers.map((answer) => {
    const data =
      answer.type === 'A' ? Buffer.from(answer.address.split('.').map(Number)) : encodeName(answer.name);
    const fixed = Buffer.alloc(12);
    fixed.writeUInt16BE(0xc00c, 0); // the question's name, at offset 12
    fixed.writeUInt16BE(answer.type === 'A' ? DnsType.A : DnsType.PTR, 2);
    fixed.writeUInt16BE(1, 4); // class IN
    fixed.writeUInt32BE(answer.ttl, 6);
    fixed.writeUInt16BE(data.length, 10);
    return Buffer.concat([fixed, data]);
  });
  return Buffer.concat([header, query.question ?? Buffer.alloc(0), ...records]);
}

/** The IPv4 address a reverse name (`4.3.2.1.in-addr.arpa`) stands for, or null. */
export function reverseAddress(name: string): string | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.in-addr\.arpa$/.exec(name);
  if (!m) return null;
  const octets = [m[4], m[3], m[2], m[1]].map(Number);
  return octets.every((o) => o <= 255) ? octets.join('.') : null;
}

/**
 * Whether `name` is a host name a program could mean: LDH labels (underscores allowed, as some
 * service names use them) of 1 to 63 characters, at most 253 characters in all.
 */
export function isHostName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 253 &&
    name.split('.').every((label) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label))
  );
}
