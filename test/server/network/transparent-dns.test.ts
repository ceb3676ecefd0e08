// The resolver of a transparent-TCP sandbox (src/server/network/transparent-dns.ts): fake
// addresses from 198.18.0.0/15, one per name, bounded; malformed or hostile queries get an error
// answer or none, never an address.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeDns, isFakeAddress, MAX_FAKE_NAMES } from '../../../src/server/network/transparent-dns';

function query(name: string, type = 1, id = 0x1234, extra?: (b: Buffer) => void): Buffer {
  const labels = name.split('.').filter(Boolean).map((l) => Buffer.concat([Buffer.from([Buffer.byteLength(l)]), Buffer.from(l)]));
  const head = Buffer.from([id >> 8, id & 255, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
  const tail = Buffer.from([0, type >> 8, type & 255, 0, 1]);
  const q = Buffer.concat([head, ...labels, tail]);
  extra?.(q);
  return q;
}

function parse(a: Buffer): { id: number; rcode: number; answers: number; address?: string; rd: boolean; qr: boolean } {
  const flags = a.readUInt16BE(2);
  const answers = a.readUInt16BE(6);
  return {
    id: a.readUInt16BE(0),
    qr: (flags & 0x8000) !== 0,
    rd: (flags & 0x0100) !== 0,
    rcode: flags & 15,
    answers,
    address: answers ? Array.from(a.subarray(a.length - 4)).join('.') : undefined,
  };
}

test('an A query gets an address of its own from 198.18.0.0/15, the same one every time, mapped back to the name', () => {
  const dns = new FakeDns();
  const a = parse(dns.answer(query('pypi.org'))!);
  assert.deepEqual({ ...a, address: undefined }, { id: 0x1234, qr: true, rd: true, rcode: 0, answers: 1, address: undefined });
  assert.equal(a.address, '198.18.0.1');
  assert.equal(parse(dns.answer(query('PyPI.org.', 1, 7))!).address, '198.18.0.1', 'names compare case-insensitively');
  assert.equal(parse(dns.answer(query('github.com'))!).address, '198.18.0.2');
  assert.equal(dns.nameOf('198.18.0.1'), 'pypi.org');
  assert.equal(dns.nameOf('198.18.0.2'), 'github.com');
  assert.equal(dns.nameOf('198.18.0.3'), undefined, 'an address never handed out names nothing');
  assert.ok(isFakeAddress('198.18.0.1') && isFakeAddress('198.19.255.254'));
  assert.ok(!isFakeAddress('198.20.0.1') && !isFakeAddress('198.17.255.255') && !isFakeAddress('8.8.8.8') && !isFakeAddress('x'));
});

test('AAAA and other types get an empty answer (IPv4 only); a bad name NXDOMAIN; no address is spent on them', () => {
  const dns = new FakeDns();
  for (const type of [28, 15, 16, 65, 255]) {
    const a = parse(dns.answer(query('pypi.org', type))!);
    assert.deepEqual([a.rcode, a.answers], [0, 0], `type ${type}`);
  }
  for (const bad of ['a b.test', 'x\u0000y.test', '-x.test', 'x-.test', 'é.test']) {
    const a = parse(dns.answer(query(bad))!);
    assert.deepEqual([a.rcode, a.answers], [3, 0], bad);
  }
  assert.equal(dns.size, 0);
});

test('attack: malformed datagrams (short, responses, compression pointers, a label past the end, two questions) never yield an address', () => {
  const dns = new FakeDns();
  assert.equal(dns.answer(Buffer.alloc(5)), undefined);
  assert.equal(dns.answer(Buffer.alloc(600)), undefined, 'over 512 bytes');
  const response = query('x.test');
  response[2] |= 0x80;
  assert.equal(dns.answer(response), undefined, 'a response is not answered (no reflection loop)');
  const pointer = Buffer.concat([query('').subarray(0, 12), Buffer.from([0xc0, 0x0c, 0, 1, 0, 1])]);
  assert.equal(parse(dns.answer(pointer)!).rcode, 1);
  const pastEnd = Buffer.concat([query('').subarray(0, 12), Buffer.from([40, 0x61, 0x62])]);
  assert.equal(parse(dns.answer(pastEnd)!).rcode, 1);
  const two = query('x.test', 1, 1, (b) => b.writeUInt16BE(2, 4));
  assert.equal(parse(dns.answer(two)!).rcode, 1);
  const notQuery = query('x.test', 1, 1, (b) => (b[2] |= 0x10)); // opcode 2 (status)
  assert.equal(parse(dns.answer(notQuery)!).rcode, 4);
  assert.equal(dns.size, 0);
});

test(`attack: a flood of distinct names is bounded (${MAX_FAKE_NAMES} names, then SERVFAIL); names already known still resolve`, () => {
  const dns = new FakeDns();
  for (let i = 0; i < MAX_FAKE_NAMES; i++) assert.equal(parse(dns.answer(query(`n${i}.flood.test`))!).answers, 1);
  const over = parse(dns.answer(query('one-more.flood.test'))!);
  assert.deepEqual([over.rcode, over.answers], [2, 0]);
  assert.equal(dns.size, MAX_FAKE_NAMES);
  assert.equal(parse(dns.answer(query('n7.flood.test'))!).address, '198.18.0.8');
});
