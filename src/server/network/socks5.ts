// The SOCKS5 proxy of one proxied process (RFC 1928), on one connection the child opened to its
// relay's SOCKS port: no authentication, CONNECT only. A name (`socks5h://`) is judged as the
// name; an address (`socks5://`, the client resolved it) as the literal. Blocked → reply 2
// ("connection not allowed by ruleset", curl: "(97) … (2)"), as the reference. UDP ASSOCIATE and
// BIND are refused with reply 7 ("command not supported"): UDP would need a relay of datagrams
// that this engine does not have, and is never carried some other way.
import type { Duplex } from 'node:stream';
import { decide, type DecisionHost } from './decide';
import { connectPinned, PrefixReader, splice } from './stream-io';

const REP_OK = 0;
const REP_FAILURE = 1;
const REP_NOT_ALLOWED = 2;
const REP_REFUSED = 5;
const REP_COMMAND_NOT_SUPPORTED = 7;
const REP_ATYP_NOT_SUPPORTED = 8;

function reply(code: number): Buffer {
  return Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}

/** Length of a complete greeting (VER NMETHODS METHODS…), or undefined. */
function greetingLength(b: Buffer): number | undefined {
  if (b.length < 2) return undefined;
  return b.length >= 2 + b[1] ? 2 + b[1] : undefined;
}

/** Length of a complete request (VER CMD RSV ATYP ADDR PORT), or undefined; -1 when ATYP is unknown. */
function requestLength(b: Buffer): number | undefined {
  if (b.length < 5) return undefined;
  const atyp = b[3];
  const addr = atyp === 1 ? 4 : atyp === 4 ? 16 : atyp === 3 ? 1 + b[4] : -1;
  if (addr < 0) return 4;
  return b.length >= 4 + addr + 2 ? 4 + addr + 2 : undefined;
}

export async function serveSocks5(stream: Duplex & { client: string }, host: DecisionHost): Promise<void> {
  const reader = new PrefixReader(stream, 1024);
  const greeting = await reader.read(greetingLength);
  if (!greeting || greeting[0] !== 5) return void stream.destroy();
  if (!greeting.subarray(2).includes(0)) return void stream.end(Buffer.from([5, 0xff]));
  stream.write(Buffer.from([5, 0]));
  const req = await reader.read(requestLength);
  if (!req || req[0] !== 5) return void stream.destroy();
  const cmd = req[1];
  const atyp = req[3];
  if (atyp !== 1 && atyp !== 3 && atyp !== 4) return void stream.end(reply(REP_ATYP_NOT_SUPPORTED));
  if (cmd !== 1) return void stream.end(reply(REP_COMMAND_NOT_SUPPORTED));
  let target: string;
  if (atyp === 1) target = Array.from(req.subarray(4, 8)).join('.');
  else if (atyp === 4) target = formatV6(req.subarray(4, 20));
  else target = req.subarray(5, 5 + req[4]).toString('latin1');
  const port = req.readUInt16BE(req.length - 2);
  if (port === 0 || target.length === 0) return void stream.end(reply(REP_FAILURE));
  const o = await decide(host, { protocol: 'socks5_tcp', host: target, port, client: stream.client });
  if (!o.ok) return void stream.end(reply(REP_NOT_ALLOWED));
  let upstream;
  try {
    upstream = await connectPinned(o.addresses, port);
  } catch {
    return void stream.end(reply(REP_REFUSED));
  }
  const rest = reader.release();
  stream.write(reply(REP_OK));
  splice(stream, upstream, rest);
}

function formatV6(b: Buffer): string {
  const parts: string[] = [];
  for (let i = 0; i < 16; i += 2) parts.push(b.readUInt16BE(i).toString(16));
  return parts.join(':');
}

export const SOCKS_REPLIES = { REP_OK, REP_NOT_ALLOWED, REP_COMMAND_NOT_SUPPORTED };
