// End-to-end backpressure over a real websocket: a client that stops reading makes the
// connection congested, the server stops reading the child's output (bounded memory), and
// everything arrives once the client reads again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as net from 'node:net';
import * as os from 'node:os';
import WebSocket from 'ws';
import { ExecServer } from '../../src/server/exec-server';
import { serveConnection } from '../../src/transports/serve';
import { listenWebSocket } from '../../src/transports/websocket-server';
import type { WebSocketTransport } from '../../src/transports/websocket-transport';
import { sleep, waitFor } from '../support/wait';

test('backpressure: a paused websocket reader bounds the server send buffer; no output is lost', async () => {
  const server = new ExecServer();
  const transports: WebSocketTransport[] = [];
  const HWM = 256 * 1024;
  const listener = await listenWebSocket({
    host: '127.0.0.1',
    port: 0,
    highWaterMark: HWM,
    onConnection: (t) => {
      transports.push(t);
      serveConnection(server, t);
    },
  });
  const ws = new WebSocket(listener.url, { maxPayload: 64 * 1024 * 1024 });
  try {
    await new Promise((r, j) => ws.once('open', r).once('error', j));
    const SIZE = 32 * 1024 * 1024;
    let received = 0;
    let closed = false;
    const replies = new Map<number, unknown>();
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString());
      if (m.id !== undefined) replies.set(m.id, m);
      else if (m.method === 'process/output') received += Buffer.from(m.params.chunk, 'base64').length;
      else if (m.method === 'process/closed') closed = true;
    });
    ws.send(JSON.stringify({ id: 1, method: 'initialize', params: { clientName: 'bp' } }));
    await waitFor(() => replies.has(1), { what: 'initialize' });
    ws.send(JSON.stringify({ method: 'initialized', params: {} }));
    const raw = (ws as unknown as { _socket: net.Socket })._socket;
    ws.send(JSON.stringify({
      id: 2,
      method: 'process/start',
      params: { processId: 'big', argv: ['head', '-c', String(SIZE), '/dev/zero'], cwd: new URL(`file://${os.tmpdir()}`).href, env: {}, tty: false },
    }));
    await waitFor(() => replies.has(2), { what: 'start' });
    raw.pause(); // stop reading: kernel buffers fill, then ws.bufferedAmount grows on the server
    const t = transports[0];
    let maxBuffered = 0;
    for (let i = 0; i < 100; i++) {
      maxBuffered = Math.max(maxBuffered, t.bufferedAmount);
      await sleep(10); // sampling: the buffer must stay bounded over a whole second of not reading
    }
    assert.ok(t.isCongested(), `congested while the client does not read (buffered ${t.bufferedAmount})`);
    assert.ok(received < SIZE, 'the stream was interrupted by the pause');
    // Without backpressure the whole ~43 MB of base64 would pile up here.
    assert.ok(maxBuffered < 8 * 1024 * 1024, `send buffer bounded: max ${maxBuffered} bytes`);
    raw.resume();
    await waitFor(() => closed, { what: 'process/closed', timeout: 60_000 });
    assert.equal(received, SIZE);
  } finally {
    ws.terminate();
    await listener.close();
    await server.shutdown();
  }
});
