// The relay that runs INSIDE a proxied sandbox (started by the sandbox's first program, before
// the command, with `node -e`; ELECTRON_RUN_AS_NODE=1 when the executor is Electron): it listens
// on the network namespace's own 127.0.0.1 — two ports, HTTP and SOCKS5 — and carries each
// accepted connection over the one descriptor it inherited (RELAY_FD, a socketpair to the
// executor) as a multiplexed stream (./mux.ts has the frame format). The policy is applied on the
// executor; the relay only moves bytes. It prints "<http port> <socks port>\n" on stdout once
// listening and exits when the descriptor closes (the executor is done with the process).
// Kept as source text (no imports, no bundler helpers): it is handed to `node -e` as it is.
import { FRAME, HEADER_BYTES, MAX_FRAME_PAYLOAD, STREAM_WINDOW } from './mux';

/** The relay's descriptor number inside the sandbox (fd 3 carries the seccomp program to bwrap). */
export const RELAY_FD = 4;

export const RELAY_SOURCE = `'use strict';
const net = require('net');
const F = ${JSON.stringify(FRAME)}, H = ${HEADER_BYTES}, MAXP = ${MAX_FRAME_PAYLOAD}, WIN = ${STREAM_WINDOW};
const mux = new net.Socket({ fd: ${RELAY_FD}, readable: true, writable: true });
const streams = new Map();
let nextId = 1;
const frame = (t, id, p) => { const h = Buffer.allocUnsafe(H); h[0] = t; h.writeUInt32BE(id, 1); h.writeUInt32BE(p ? p.length : 0, 5); return p && p.length ? Buffer.concat([h, p]) : h; };
const u32 = (n) => { const b = Buffer.allocUnsafe(4); b.writeUInt32BE(n >>> 0, 0); return b; };
const send = (b) => { if (!mux.destroyed) mux.write(b); };
function accept(kind) {
  return (sock) => {
    const id = nextId++;
    const s = { sock, inflight: 0, gone: false };
    streams.set(id, s);
    const port = Buffer.allocUnsafe(3); port[0] = kind; port.writeUInt16BE(sock.remotePort || 0, 1);
    send(frame(F.OPEN, id, port));
    sock.on('data', (d) => {
      for (let o = 0; o < d.length; o += MAXP) send(frame(F.DATA, id, d.subarray(o, o + MAXP)));
      s.inflight += d.length;
      if (s.inflight >= WIN) sock.pause();
    });
    sock.on('end', () => { if (!s.gone) send(frame(F.END, id)); });
    sock.on('error', () => {});
    sock.on('close', () => { if (!s.gone) { s.gone = true; send(frame(F.CLOSE, id)); } streams.delete(id); });
  };
}
let buf = Buffer.alloc(0);
mux.on('data', (d) => {
  buf = buf.length ? Buffer.concat([buf, d]) : d;
  while (buf.length >= H) {
    const t = buf[0], id = buf.readUInt32BE(1), len = buf.readUInt32BE(5);
    if (len > MAXP) process.exit(2);
    if (buf.length < H + len) break;
    const p = buf.subarray(H, H + len);
    buf = buf.subarray(H + len);
    const s = streams.get(id);
    if (!s) continue;
    if (t === F.DATA) { const n = p.length; s.sock.write(Buffer.from(p), () => send(frame(F.WINDOW, id, u32(n)))); }
    else if (t === F.END) s.sock.end();
    else if (t === F.CLOSE) { s.gone = true; s.sock.destroy(); }
    else if (t === F.WINDOW) { s.inflight = Math.max(0, s.inflight - p.readUInt32BE(0)); if (s.inflight < WIN) s.sock.resume(); }
  }
});
const quit = () => process.exit(0);
mux.on('close', quit); mux.on('end', quit); mux.on('error', quit);
const http = net.createServer({ pauseOnConnect: false }, accept(0));
const socks = net.createServer(accept(1));
http.listen(0, '127.0.0.1', () => socks.listen(0, '127.0.0.1', () => {
  process.stdout.write(http.address().port + ' ' + socks.address().port + '\\n');
}));
`;
