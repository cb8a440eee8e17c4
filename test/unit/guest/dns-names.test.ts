import assert from 'node:assert/strict';
import { connect, createServer, type Server } from 'node:net';
import { describe, it } from 'node:test';
import {
  buildResponse,
  DnsType,
  headerOf,
  isHostName,
  parseQuery,
  Rcode,
  reverseAddress,
} from '../../../src/guest/dns-wire.js';
import { NameTable } from '../../../src/guest/name-table.js';
import { procEndpoint } from '../../../src/guest/socket-owner.js';

/** A standard query as a stub resolver sends it (optionally with an EDNS OPT record). */
function query(name: string, type: number, options: { id?: number; edns?: boolean } = {}): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(options.id ?? 0x1234, 0);
  header.writeUInt16BE(0x0100, 2); // RD
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(options.edns ? 1 : 0, 10);
  const labels = name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(type, 0);
  tail.writeUInt16BE(1, 2);
  const opt = options.edns ? Buffer.from([0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]) : Buffer.alloc(0);
  return Buffer.concat([header, ...labels, Buffer.from([0]), tail, opt]);
}

describe('the guest resolver wire format', () => {
  it('reads a stub query (with or without EDNS) and answers A records the way resolvers expect', () => {
    const q = parseQuery(query('Registry.Example.COM', DnsType.A, { edns: true }));
    assert.ok(q);
    assert.equal(q.name, 'registry.example.com');
    assert.equal(q.type, DnsType.A);
    const reply = buildResponse(q, Rcode.noError, [{ type: 'A', address: '127.77.1.2', ttl: 300 }]);
    assert.equal(reply.readUInt16BE(0), 0x1234);
    assert.equal(reply.readUInt16BE(2) & 0x8000, 0x8000); // a response
    assert.equal(reply.readUInt16BE(2) & 0x0f, Rcode.noError);
    assert.equal(reply.readUInt16BE(6), 1);
    assert.deepEqual([...reply.subarray(reply.length - 4)], [127, 77, 1, 2]);
    // the question is echoed as asked
    assert.ok(reply.subarray(12).toString('latin1').includes('Registry'));
  });

  it('refuses to parse what a stub never sends, and answers FORMERR from the header where it can', () => {
    const good = query('a.example', DnsType.A);
    assert.equal(parseQuery(good.subarray(0, 11)), null);
    const two = Buffer.from(good);
    two.writeUInt16BE(2, 4);
    assert.equal(parseQuery(two), null);
    const response = Buffer.from(good);
    response.writeUInt16BE(0x8100, 2);
    assert.equal(parseQuery(response), null);
    assert.equal(headerOf(response), null); // never answer an answer (no reflection loops)
    const pointer = Buffer.from(good);
    pointer[12] = 0xc0; // compression in a question
    assert.equal(parseQuery(pointer), null);
    assert.deepEqual(headerOf(pointer), { id: 0x1234, rd: true });
    const long = query(Array.from({ length: 5 }, () => 'a'.repeat(63)).join('.'), DnsType.A);
    assert.equal(parseQuery(long), null);
  });

  it('accepts host names only, and reads reverse names of IPv4 addresses', () => {
    for (const name of ['example.com', 'a-b.c_d.test', 'x'.repeat(63)]) assert.ok(isHostName(name), name);
    for (const name of ['', '-a.com', 'a-.com', 'a..b', 'x'.repeat(64), 'a b.com', 'ä.com'])
      assert.equal(isHostName(name), false, name);
    assert.equal(reverseAddress('4.3.77.127.in-addr.arpa'), '127.77.3.4');
    assert.equal(reverseAddress('4.3.77.300.in-addr.arpa'), null);
  });

  it('prints endpoints the way /proc/net/tcp does', () => {
    assert.equal(procEndpoint('127.0.0.1', 53), '0100007F:0035');
  });
});

describe('handed-out names', () => {
  const ports = [41_871, 41_872];

  it('binds every port of a name before its address is given out, and a connection says which name and port', async () => {
    const seen: string[] = [];
    const table = new NameTable(
      ports,
      (socket, target) => {
        seen.push(`${target.host}:${target.port}`);
        socket.destroy();
      },
      () => undefined,
    );
    try {
      const address = await table.addressOf('git.example.test');
      assert.ok(address?.startsWith('127.77.'));
      assert.equal(await table.addressOf('git.example.test'), address, 'a name keeps its address');
      assert.equal(table.nameOf(address!), 'git.example.test');
      for (const port of ports) {
        await new Promise<void>((resolve, reject) => {
          const s = connect({ host: address!, port }, () => s.end());
          s.on('close', () => resolve());
          s.on('error', reject);
        });
      }
      assert.deepEqual(seen.sort(), ports.map((p) => `git.example.test:${p}`).sort());
    } finally {
      table.close();
    }
  });

  it('never hands out an address a program already listens on (squatting moves the name elsewhere)', async () => {
    // the first address the table would pick is taken by "a program"
    const picks = [0.25, 0.25, 0.5];
    const random = () => picks.shift() ?? Math.random();
    const squatted = `127.77.${Math.floor(0.25 * 65_534 + 1) >> 8}.${(Math.floor(0.25 * 65_534) + 1) & 0xff}`;
    const squatter: Server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => squatter.listen({ host: squatted, port: ports[1] }, resolve));
    const table = new NameTable(
      ports,
      (s) => s.destroy(),
      () => undefined,
      random,
    );
    try {
      const address = await table.addressOf('db.example.test');
      assert.ok(address);
      assert.notEqual(address, squatted);
    } finally {
      table.close();
      squatter.close();
    }
  });
});
