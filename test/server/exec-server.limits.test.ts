// Resource limits of the engine, exercised for real (in-process connection, real files and
// processes): fs handles per connection, processes per session, read-block size, retained
// output per process. Each limit answers a clear error and frees up again.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { connectClient, newServerClient, rejectsWith, startParams, tmpDir, uri, type Client } from '../support/server';
import { ExecServer } from '../../src/server/exec-server';

const dir = tmpDir('es-limits-');
const clients: Client[] = [];
after(async () => {
  for (const c of clients) {
    c.conn.close();
    await c.server.shutdown();
  }
  rmSync(dir, { recursive: true, force: true });
});

test('128 open fs read handles per connection: the 129th is refused, closing one frees a slot, a new connection has its own', async () => {
  const c = await newServerClient();
  clients.push(c);
  const file = path.join(dir, 'h.txt');
  writeFileSync(file, 'abc');
  for (let i = 0; i < 128; i++) await c.call('fs/open', { handleId: `h${i}`, path: uri(file) });
  await rejectsWith(c.call('fs/open', { handleId: 'h128', path: uri(file) }), -32600, /at most 128 file handles/);
  await c.call('fs/close', { handleId: 'h0' });
  assert.deepEqual(await c.call('fs/open', { handleId: 'h128', path: uri(file) }), { handleId: 'h128' });
  const other = await connectClient(c.server);
  clients.push(other);
  assert.deepEqual(await other.call('fs/open', { handleId: 'h0', path: uri(file) }), { handleId: 'h0' });
});

test('fs/readBlock length must be 1 byte .. 1 MiB', async () => {
  const c = await newServerClient();
  clients.push(c);
  const file = path.join(dir, 'big.bin');
  writeFileSync(file, Buffer.alloc(2 * 1024 * 1024, 7));
  await c.call('fs/open', { handleId: 'b', path: uri(file) });
  for (const len of [0, 1024 * 1024 + 1, 2 ** 40]) {
    await rejectsWith(c.call('fs/readBlock', { handleId: 'b', offset: 0, len }), -32600, /between 1 and 1048576/);
  }
  // Not a length at all: a decoding error.
  for (const len of [-1, 1.5, '10', null]) await rejectsWith(c.call('fs/readBlock', { handleId: 'b', offset: 0, len }), -32602);
  const r = (await c.call('fs/readBlock', { handleId: 'b', offset: 0, len: 1024 * 1024 })) as { chunk: string; eof: boolean };
  assert.equal(Buffer.from(r.chunk, 'base64').length, 1024 * 1024);
  assert.equal(r.eof, false);
});

test('live processes per session are capped (maxProcessesPerSession); an exited one frees its slot', async () => {
  const c = await connectClient(new ExecServer({ maxProcessesPerSession: 3 }), undefined, true);
  clients.push(c);
  for (const id of ['a', 'b', 'c']) await c.call('process/start', startParams(id, ['/bin/sleep', '30']));
  await rejectsWith(c.call('process/start', startParams('d', ['/bin/sleep', '30'])), -32600, /too many processes in this session \(limit 3\)/);
  await c.call('process/terminate', { processId: 'a' });
  await c.sink.waitFor(() => c.sink.closed('a'), 15_000, 'a closed');
  assert.equal(((await c.call('process/start', startParams('d', ['/bin/sleep', '30']))) as { processId: string }).processId, 'd');
});

test('retained output is capped at 1 MiB per process (oldest dropped); notifications still carry every byte', async () => {
  const c = await newServerClient();
  clients.push(c);
  const total = 3 * 1024 * 1024;
  await c.call('process/start', startParams('big', ['/bin/sh', '-c', `head -c ${total} /dev/zero`]));
  await c.sink.waitFor(() => c.sink.closed('big'), 30_000, 'big closed');
  const live = c.sink
    .forProcess('big')
    .filter((e) => e.method === 'process/output')
    .reduce((n, e) => n + Buffer.from(e.params.chunk, 'base64').length, 0);
  assert.equal(live, total, 'every byte was notified live');
  const r = (await c.call('process/read', { processId: 'big', maxBytes: 64 * 1024 * 1024 })) as {
    chunks: Array<{ seq: number; chunk: string }>;
    exited: boolean;
  };
  const retained = r.chunks.reduce((n, ch) => n + Buffer.from(ch.chunk, 'base64').length, 0);
  assert.ok(retained <= 1024 * 1024, `retained ${retained} bytes`);
  assert.ok(retained > 512 * 1024, `retained only ${retained} bytes`);
  assert.ok(r.chunks[0].seq > 1, 'the oldest chunks were dropped');
  assert.equal(r.exited, true);
});
