// RpcConnection (src/rpc/connection.ts) over two in-memory transports: request/response matching,
// errors, close, timeouts, invalid frames.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RpcConnection } from '../../src/rpc/connection';
import { Emitter } from '../../src/rpc/event';
import type { CloseInfo, MessageTransport } from '../../src/rpc/transport';
import { ErrorCodes, RpcError } from '../../src/protocol/errors';
import { waitFor } from '../support/wait';

/** Two in-memory transports wired to each other, delivering asynchronously like a socket. */
function pair(): [MessageTransport, MessageTransport] {
  const mk = () => {
    const msg = new Emitter<unknown>();
    const perr = new Emitter<string>();
    const close = new Emitter<CloseInfo>();
    const t = {
      closed: false,
      peer: undefined as any,
      onMessage: msg.event,
      onParseError: perr.event,
      onClose: close.event,
      send(m: object) {
        if (t.closed) return;
        const json = JSON.stringify(m);
        setImmediate(() => t.peer.deliver(json));
      },
      deliver(json: string) {
        if (t.closed) return;
        let v: unknown;
        try { v = JSON.parse(json); } catch (e) { perr.fire(String(e)); return; }
        msg.fire(v);
      },
      close(reason = 'closed') {
        if (t.closed) return;
        t.closed = true;
        close.fire({ reason, local: true });
        setImmediate(() => t.peer.remoteClose(reason));
      },
      remoteClose(reason: string) {
        if (t.closed) return;
        t.closed = true;
        close.fire({ reason, local: false });
      },
      dispose() { t.close(); },
    };
    return t;
  };
  const a = mk(), b = mk();
  a.peer = b; b.peer = a;
  return [a, b];
}

test('responses are matched by id even when they arrive out of order', async () => {
  const [a, b] = pair();
  const client = new RpcConnection(a);
  const server = new RpcConnection(b);
  // Answers are held back by hand: fast answers first, mid once fast's answer is in, slow last.
  const release = new Map<string, () => void>();
  const arrived: string[] = [];
  server.setRequestHandler(async (m, params) => {
    if (m !== 'fast') await new Promise<void>((r) => release.set(m, r));
    return { v: (params as { v: number }).v };
  });
  const settle = (name: string, next?: string) => (r: unknown) => (arrived.push(name), next && release.get(next)!(), r);
  const results = await Promise.all([
    client.request('slow', { v: 1 }).then(settle('slow')),
    client.request('fast', { v: 2 }).then(settle('fast', 'mid')),
    client.request('mid', { v: 3 }).then(settle('mid', 'slow')),
  ]);
  assert.deepEqual(arrived, ['fast', 'mid', 'slow'], 'answered out of request order');
  assert.deepEqual(results, [{ v: 1 }, { v: 2 }, { v: 3 }]);
});

test('handler errors become typed RpcErrors with their code on the caller side', async () => {
  const [a, b] = pair();
  const client = new RpcConnection(a);
  const server = new RpcConnection(b);
  server.setRequestHandler((m) => {
    if (m === 'typed') throw new RpcError(ErrorCodes.NotFound, 'no such file');
    throw new Error('boom');
  });
  await assert.rejects(client.request('typed', {}), (e: any) => e instanceof RpcError && e.code === -32004 && e.message === 'no such file');
  await assert.rejects(client.request('plain', {}), (e: any) => e.code === ErrorCodes.InternalError && e.message === 'boom');
});

test('pending calls fail with a clear connection closed error when the transport ends', async () => {
  const [a, b] = pair();
  const client = new RpcConnection(a);
  const server = new RpcConnection(b);
  server.setRequestHandler(() => new Promise(() => {})); // never answers
  const p = client.request('hang', {});
  setTimeout(() => server.close('server went away'), 10);
  await assert.rejects(p, (e: any) => e.code === ErrorCodes.ConnectionClosed && /connection closed: server went away/.test(e.message));
  await assert.rejects(client.request('after', {}), /connection closed/);
});

test('notifications reach the peer and invalid frames get an error response with id null', async () => {
  const [a, b] = pair();
  const client = new RpcConnection(a);
  const server = new RpcConnection(b);
  const got: unknown[] = [];
  server.onNotification((n) => got.push(n));
  client.notify('initialized', {});
  const errors: unknown[] = [];
  client.transport.onMessage((m) => errors.push(m));
  (b as any).deliver('{not json');
  (b as any).deliver('[1,2]');
  await waitFor(() => errors.length >= 2, { what: 'the two error responses' });
  assert.deepEqual(got, [{ method: 'initialized', params: {} }]);
  assert.equal(errors.length, 2);
  assert.equal((errors[0] as any).error.code, ErrorCodes.ParseError);
  assert.equal((errors[1] as any).error.code, ErrorCodes.InvalidRequest);
  assert.equal((errors[1] as any).id, null);
});

test('a request times out with RequestTimeout and a late answer is ignored', async () => {
  const [a, b] = pair();
  const client = new RpcConnection(a);
  const server = new RpcConnection(b);
  let answer!: (v: object) => void;
  server.setRequestHandler(() => new Promise((r) => (answer = r)));
  await assert.rejects(client.request('slow', {}, { timeoutMs: 10 }), (e: any) => e.code === ErrorCodes.RequestTimeout);
  const late = waitFor({ event: client.transport.onMessage }, { what: 'the late answer' });
  answer({});
  await late; // the connection's own listener (subscribed first) has handled it by now
  assert.equal(client.pendingCount, 0);
});

test('a method call with "id": null is rejected as invalid, not taken for a notification', async () => {
  const [a, b] = pair();
  const client = new RpcConnection(a);
  const server = new RpcConnection(b);
  const notes: unknown[] = [];
  server.onNotification((n) => notes.push(n));
  const replies: any[] = [];
  client.transport.onMessage((m) => replies.push(m));
  (b as any).deliver(JSON.stringify({ id: null, method: 'initialized', params: {} }));
  await waitFor(() => replies.length >= 1, { what: 'the error reply' });
  assert.deepEqual(notes, []);
  assert.equal(replies.length, 1);
  assert.equal(replies[0].id, null);
  assert.equal(replies[0].error.code, ErrorCodes.InvalidRequest);
});

test('a value the transport cannot serialize fails that call on both sides instead of leaking or crashing', async () => {
  const [a, b] = pair();
  const client = new RpcConnection(a);
  const server = new RpcConnection(b);
  server.setRequestHandler(async (method) => (method === 'big' ? { n: 1n } : { ok: true }));
  // Client side: params with a BigInt reject at once and leave nothing pending.
  await assert.rejects(client.request('ok', { n: 2n }, { timeoutMs: 60_000 }), TypeError);
  assert.equal(client.pendingCount, 0);
  // Server side: an unserializable result becomes an InternalError answer, not an unhandled rejection.
  await assert.rejects(client.request('big', {}, { timeoutMs: 30_000 }), (e: unknown) => e instanceof RpcError && e.code === ErrorCodes.InternalError && /BigInt/.test(e.message));
  assert.deepEqual(await client.request('ok', {}), { ok: true });
  client.close();
  server.close();
});
