// The resolver of a transparent-TCP sandbox (networkProxyTransparentTcp): the sandbox's
// /etc/resolv.conf names 127.0.0.53, whose UDP socket the executor holds (./transparent.ts).
// Every name gets an address of its own from 198.18.0.0/15 (RFC 2544's benchmarking range, as
// the reference answers), never a real lookup: a connection to that address arrives at the
// executor as a connection to the name, and the name is what the policy judges and what the
// executor resolves itself, pinned, when it connects (./decide.ts). AAAA and every other type
// get an empty answer, so clients fall back to IPv4, the only family the sandbox can route.

/** 198.18.0.0/15, as unsigned 32-bit numbers: its first and last address. */
const FAKE_NET = ((198 << 24) | (18 << 16)) >>> 0;
const FAKE_NET_END = FAKE_NET + 2 ** 17 - 1;
/** First and last address handed out: 198.18.0.1 … 198.19.255.254. */
const POOL_FIRST = FAKE_NET + 1;
const POOL_LAST = FAKE_NET_END - 1;
/** Names one sandbox may have addresses for; a query for one more is answered SERVFAIL. */
export const MAX_FAKE_NAMES = 4096;
/** The TTL of an answer: short, the mapping itself lasts as long as the process. */
const ANSWER_TTL = 60;

const TYPE_A = 1;
const CLASS_IN = 1;
const RCODE_FORMERR = 1;
const RCODE_SERVFAIL = 2;
const RCODE_NXDOMAIN = 3;
const RCODE_NOTIMP = 4;

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

const u32 = (ip: string): number | undefined => {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
  if (!m) return undefined;
  const b = m.slice(1).map(Number);
  if (b.some((x) => x > 255)) return undefined;
  return ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0;
};

/** Is `ip` in the range this resolver answers from? */
export function isFakeAddress(ip: string): boolean {
  const n = u32(ip);
  return n !== undefined && n >= FAKE_NET && n <= FAKE_NET_END;
}

export class FakeDns {
  private readonly byName = new Map<string, number>();
  private readonly byAddress = new Map<number, string>();
  private next = POOL_FIRST;

  /** The name an address was handed out for, or undefined. */
  nameOf(ip: string): string | undefined {
    const n = u32(ip);
    return n === undefined ? undefined : this.byAddress.get(n);
  }

  get size(): number {
    return this.byName.size;
  }

  private addressOf(name: string): number | undefined {
    const known = this.byName.get(name);
    if (known !== undefined) return known;
    if (this.byName.size >= MAX_FAKE_NAMES || this.next > POOL_LAST) return undefined;
    const n = this.next++;
    this.byName.set(name, n);
    this.byAddress.set(n, name);
    return n;
  }

  /** The answer to one query datagram, or undefined when it is not a query worth answering. */
  answer(q: Buffer): Buffer | undefined {
    if (q.length < 12 || q.length > 512) return undefined;
    const flags = q.readUInt16BE(2);
    if (flags & 0x8000) return undefined; // a response, not a query
    const opcode = (flags >> 11) & 15;
    const qd = q.readUInt16BE(4);
    const reply = (rcode: number, question?: Buffer, address?: number): Buffer => {
      const head = Buffer.alloc(12);
      head.writeUInt16BE(q.readUInt16BE(0), 0);
      head.writeUInt16BE(0x8000 | (opcode << 11) | (flags & 0x0100) | 0x0080 | rcode, 2);
      head.writeUInt16BE(question ? 1 : 0, 4);
      head.writeUInt16BE(address !== undefined ? 1 : 0, 6);
      const parts: Buffer[] = [head];
      if (question) parts.push(question);
      if (address !== undefined) {
        const rr = Buffer.alloc(16);
        rr.writeUInt16BE(0xc00c, 0); // the question's name
        rr.writeUInt16BE(TYPE_A, 2);
        rr.writeUInt16BE(CLASS_IN, 4);
        rr.writeUInt32BE(ANSWER_TTL, 6);
        rr.writeUInt16BE(4, 10);
        rr.writeUInt32BE(address >>> 0, 12);
        parts.push(rr);
      }
      return Buffer.concat(parts);
    };
    if (opcode !== 0) return reply(RCODE_NOTIMP);
    if (qd !== 1) return reply(RCODE_FORMERR);
    const labels: string[] = [];
    let at = 12;
    for (;;) {
      if (at >= q.length) return reply(RCODE_FORMERR);
      const len = q[at];
      if (len === 0) break;
      if (len > 63 || at + 1 + len > q.length) return reply(RCODE_FORMERR); // compression pointers too
      labels.push(q.toString('latin1', at + 1, at + 1 + len).toLowerCase());
      at += 1 + len;
    }
    at += 1;
    if (at + 4 > q.length || at - 12 > 255) return reply(RCODE_FORMERR);
    const question = q.subarray(12, at + 4);
    const qtype = q.readUInt16BE(at);
    const qclass = q.readUInt16BE(at + 2);
    const name = labels.join('.');
    if (labels.length === 0 || !labels.every((l) => LABEL.test(l))) return reply(RCODE_NXDOMAIN, question);
    if (qtype !== TYPE_A || qclass !== CLASS_IN) return reply(0, question);
    const address = this.addressOf(name);
    if (address === undefined) return reply(RCODE_SERVFAIL, question);
    return reply(0, question, address);
  }
}
