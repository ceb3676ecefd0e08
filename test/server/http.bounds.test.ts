// http/request against a real HTTP server on 127.0.0.1 sending large bodies (src/server/http.ts):
// a collected (non-streamed) body is bounded — past MAX_BUFFERED_HTTP_BODY_BYTES the request is
// refused with a clear -32600 and the response is dropped, not held; a streamed body is read
// only as fast as the client takes it — while the connection is congested the engine stops
// pulling, so the server's writes stall instead of the engine buffering the whole body.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { ServerConnection } from '../../src/server/api';
import { ExecServer } from '../../src/server/exec-server';
import { MAX_BUFFERED_HTTP_BODY_BYTES } from '../../src/server/http';
import { RecordingSink, rejectsWith } from '../support/server';

/** rejectsWith, but a (wrong) success is reported by its size: a body of tens of MiB is no message. */
const refused = (p: Promise<any>, code: number, msg: string) =>
  rejectsWith(
    p.then((r) => ({ status: r.status, bodyBytes: Buffer.from(r.bodyBase64 ?? '', 'base64').length })),
    code,
    msg,
  );
import { waitFor } from '../support/wait';

const CHUNK = 64 * 1024;
/** Byte i of every body: a pattern that shows a lost, repeated or reordered chunk. */
const pattern = (() => {
  const b = Buffer.alloc(CHUNK * 251);
  for (let i = 0; i < b.length; i++) b[i] = i % 251;
  return b;
})();
const chunkAt = (offset: number, len: number) => pattern.subarray(offset % (CHUNK * 251), (offset % (CHUNK * 251)) + len);

/** What the server managed to hand to its socket per request path, and whether it is waiting for 'drain'. */
const progress = new Map<string, { sent: number; waiting: boolean; closed: boolean; lastMove: number }>();

let httpServer: http.Server;
let base: string;

/** Writes `total` bytes of the pattern in CHUNK pieces, honouring backpressure; `declare`: send Content-Length. */
function sendBody(req: http.IncomingMessage, res: http.ServerResponse, total: number, declare: boolean): void {
  const p = { sent: 0, waiting: false, closed: false, lastMove: Date.now() };
  progress.set(req.url!, p);
  res.writeHead(200, declare ? { 'content-type': 'application/octet-stream', 'content-length': String(total) } : { 'content-type': 'application/octet-stream' });
  res.on('close', () => (p.closed = true));
  const more = () => {
    p.waiting = false;
    while (p.sent < total && !p.closed) {
      const n = Math.min(CHUNK, total - p.sent);
      const ok = res.write(chunkAt(p.sent, n));
      p.sent += n;
      p.lastMove = Date.now();
      if (!ok) {
        p.waiting = true;
        res.once('drain', more);
        return;
      }
    }
    if (!p.closed) res.end();
  };
  more();
}

const sink = new (class extends RecordingSink {
  congested = false;
  private drains = new Set<() => void>();
  isCongested(): boolean {
    return this.congested;
  }
  onDrain(listener: () => void): { dispose(): void } {
    this.drains.add(listener);
    return { dispose: () => this.drains.delete(listener) };
  }
  release(): void {
    this.congested = false;
    for (const l of [...this.drains]) l();
  }
})();
let server: ExecServer;
let conn: ServerConnection;
const call = (m: string, p: unknown) => conn.requestUntyped(m, p) as Promise<any>;

before(async () => {
  httpServer = http.createServer((req, res) => {
    const m = /^\/(declared|chunked|stream|small)\/(\d+)/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    sendBody(req, res, Number(m[2]), m[1] === 'declared' || m[1] === 'small');
  });
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  server = new ExecServer();
  conn = server.connect(sink, { label: 'test' });
  await conn.requestUntyped('initialize', { clientName: 'test' });
  conn.notification('initialized', {});
});
after(async () => {
  await server.shutdown();
  httpServer.closeAllConnections();
  await new Promise((r) => httpServer.close(r));
});

const TOO_LARGE = `http/request response body is larger than ${MAX_BUFFERED_HTTP_BODY_BYTES} bytes; send streamResponse: true to receive it as http/request/bodyDelta notifications`;

test('http/request (collected): a body past the bound is refused with a clear -32600, its response dropped; the connection keeps working', async () => {
  const over = MAX_BUFFERED_HTTP_BODY_BYTES + 1;
  // Declared length: refused from the header, before the body is read.
  await refused(call('http/request', { method: 'GET', url: `${base}/declared/${over}`, headers: [], requestId: 'b1' }), -32600, TOO_LARGE);
  // No length (chunked, twice the bound): refused once the bound is passed; the rest is never read.
  const total = 2 * MAX_BUFFERED_HTTP_BODY_BYTES;
  const path = `/chunked/${total}`;
  await refused(call('http/request', { method: 'GET', url: `${base}${path}`, headers: [], requestId: 'b2' }), -32600, TOO_LARGE);
  await waitFor(() => progress.get(path)?.closed, { what: 'the server sees the response dropped' });
  assert.ok(progress.get(path)!.sent < total, `the server wrote all ${total} bytes`);
  // A body within the bound still arrives whole.
  const r = await call('http/request', { method: 'GET', url: `${base}/small/300000`, headers: [], requestId: 'b3' });
  assert.equal(r.status, 200);
  assert.ok(Buffer.from(r.bodyBase64, 'base64').equals(chunkAt(0, 300000)));
});

test('http/request (streamed): while the client is congested the body is not pulled — the sender stalls; released, every byte arrives in order', async () => {
  const total = 64 * 1024 * 1024;
  const path = `/stream/${total}`;
  const deltas = () => sink.events.filter((e) => e.method === 'http/request/bodyDelta' && e.params.requestId === 's1').map((e) => e.params);
  const received = () => deltas().reduce((n, d) => n + Buffer.from(d.deltaBase64, 'base64').length, 0);
  sink.congested = true;
  const r = await call('http/request', { method: 'GET', url: `${base}${path}`, headers: [], requestId: 's1', streamResponse: true });
  assert.equal(r.status, 200);
  // The sender stalls: waiting for 'drain' with nothing moving for a while (or it finished: the engine took everything).
  await waitFor(
    () => {
      const p = progress.get(path);
      return p !== undefined && (p.sent === total || (p.waiting && Date.now() - p.lastMove > 500));
    },
    { timeout: 30_000, what: 'the sender stalls or finishes' },
  );
  const sentWhileCongested = progress.get(path)!.sent;
  const deliveredWhileCongested = received();
  assert.ok(sentWhileCongested < 16 * 1024 * 1024, `the server could send ${sentWhileCongested} of ${total} bytes to a congested client`);
  assert.ok(deliveredWhileCongested <= 1024 * 1024, `${deliveredWhileCongested} bytes were pushed to a congested client`);
  sink.release();
  await waitFor(() => deltas().some((d) => d.done), { timeout: 60_000, what: 'the last bodyDelta' });
  const all = deltas();
  assert.deepEqual(
    all.map((d) => d.seq),
    all.map((_, i) => i + 1),
  );
  assert.equal(all.at(-1)!.error, null);
  const body = Buffer.concat(all.map((d) => Buffer.from(d.deltaBase64, 'base64')));
  assert.equal(body.length, total);
  const expected = crypto.createHash('sha256');
  for (let off = 0; off < total; off += CHUNK) expected.update(chunkAt(off, Math.min(CHUNK, total - off)));
  assert.equal(crypto.createHash('sha256').update(body).digest('hex'), expected.digest('hex'));
});
