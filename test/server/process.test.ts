import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ExecServer } from '../../src/server/exec-server';
import { b64, connectClient, ENV, rejectsWith, startParams, unb64, uri } from './helpers';

const servers: ExecServer[] = [];
after(async () => {
  for (const s of servers) await s.shutdown();
});
async function client(opts = {}) {
  const s = new ExecServer(opts);
  servers.push(s);
  return connectClient(s);
}

test('process/start pipes: output, exited, closed with one increasing seq', async () => {
  const c = await client();
  const r = await c.call('process/start', startParams('p1', ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3']));
  assert.deepEqual(r, { processId: 'p1', sandboxType: 'none' });
  await c.sink.waitFor(() => c.sink.closed('p1'));
  const evs = c.sink.forProcess('p1');
  assert.deepEqual(
    evs.map((e) => e.params.seq),
    evs.map((_, i) => i + 1),
  );
  const exited = evs.find((e) => e.method === 'process/exited')!;
  assert.equal(exited.params.exitCode, 3);
  assert.equal(exited.params.sandboxDenied, false);
  assert.equal(evs[evs.length - 1].method, 'process/closed');
  const text = (stream: string) =>
    evs.filter((e) => e.method === 'process/output' && e.params.stream === stream).map((e) => unb64(e.params.chunk)).join('');
  assert.equal(text('stdout'), 'out\n');
  assert.equal(text('stderr'), 'err\n');
  const read = await c.call('process/read', { processId: 'p1' });
  assert.equal(read.exited, true);
  assert.equal(read.closed, true);
  assert.equal(read.exitCode, 3);
  assert.equal(read.chunks.length, 2);
});
