// The RPC layer's telemetry seam (src/rpc/connection.ts), over real stdio transports on a
// stream pair: the observer sees each request (with its `trace` member) before its handler,
// and its end comes after the response (or error) was handed to the transport, with the error
// code; a request's `trace` option goes on the wire as the `trace` member.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { ErrorCodes, RpcError } from '../../src/protocol/errors';
import { RpcConnection, type RequestObservation } from '../../src/rpc/connection';
import type { RequestMessage } from '../../src/rpc/messages';
import { StdioTransport } from '../../src/transports/stdio';

test('observe: before the handler, ended after the response was sent, with the error code', async () => {
  const up = new PassThrough();
  const down = new PassThrough();
  const serverTransport = new StdioTransport(up, down);
  const events: string[] = [];
  const seen: RequestMessage[] = [];
  const send = serverTransport.send.bind(serverTransport);
  serverTransport.send = (m: object) => {
    events.push(`send ${'error' in m ? 'error' : 'result'}`);
    send(m);
  };
  const server = new RpcConnection(serverTransport, {
    observeRequest: (msg): RequestObservation => {
      seen.push(msg);
      events.push(`observe ${msg.method}`);
      return { end: (e) => events.push(`end ${msg.method}${e ? ` ${e.code}` : ''}`) };
    },
  });
  server.setRequestHandler(async (method, _params, _id, obs) => {
    events.push(`handle ${method} ${obs ? 'with' : 'without'} observation`);
    if (method === 'fail') throw new RpcError(ErrorCodes.InvalidRequest, 'no');
    if (method === 'bigint') return { n: 1n };
    return { ok: true };
  });
  const client = new RpcConnection(new StdioTransport(down, up));
  const trace = { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`, tracestate: 'k=v' };
  assert.deepEqual(await client.request('ok', {}, { trace }), { ok: true });
  await assert.rejects(client.request('fail', {}), (e: unknown) => e instanceof RpcError && e.code === ErrorCodes.InvalidRequest);
  await assert.rejects(client.request('bigint', {}), (e: unknown) => e instanceof RpcError && e.code === ErrorCodes.InternalError);
  assert.deepEqual(seen[0].trace, trace);
  assert.equal(seen[1].trace, undefined);
  assert.deepEqual(events, [
    'observe ok',
    'handle ok with observation',
    'send result',
    'end ok',
    'observe fail',
    'handle fail with observation',
    'send error',
    'end fail -32600',
    'observe bigint',
    'handle bigint with observation',
    'send result', // the transport refuses to serialize it…
    'send error', // …so an InternalError is sent instead
    'end bigint -32603',
  ]);
  client.close();
  server.close();
});
