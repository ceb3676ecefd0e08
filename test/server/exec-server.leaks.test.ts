// src/server/exec-server.ts: no descriptor or process outlives its process, handle or watch, nor the server's shutdown.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import path from 'node:path';
import { test } from 'node:test';
import { ExecServer } from '../../src/server/exec-server';
import { b64, connectClient, startParams, tmpDir, uri } from '../support/server';
import { waitFor } from '../support/wait';

const openFds = () => fs.readdirSync('/proc/self/fd').length;

test('no descriptor or process leaks: many pipe + PTY processes, handles and watches, then shutdown', { skip: !fs.existsSync('/proc/self/fd') && 'needs /proc' }, async () => {
  const dir = tmpDir();
  fs.writeFileSync(path.join(dir, 'f'), 'data');
  // Warm up lazily loaded modules (node-pty) so they do not count as leaks.
  {
    const s0 = new ExecServer();
    const c0 = await connectClient(s0);
    await c0.call('process/start', startParams('warm', ['true'], { tty: true }));
    await c0.sink.waitFor(() => c0.sink.closed('warm'));
    await s0.shutdown();
  }
  const before = openFds();
  const s = new ExecServer({ exitedProcessRetentionMs: 50 });
  const c = await connectClient(s);
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) {
    const id = `p${i}`;
    ids.push(id);
    await c.call('process/start', startParams(id, ['/bin/sh', '-c', 'read x; echo got-$x'], { pipeStdin: true, tty: i % 4 === 0 }));
    await c.call('process/write', { processId: id, chunk: b64('v\n'), writeId: 'w' });
  }
  await c.sink.waitFor(() => ids.every((id) => c.sink.closed(id)), 60_000, 'all processes closed');
  for (const id of ids) assert.match(c.sink.outputText(id), /got-v/);
  for (let i = 0; i < 20; i++) await c.call('fs/open', { handleId: `h${i}`, path: uri(path.join(dir, 'f')) });
  await c.call('fs/watch', { watchId: 'w', path: uri(dir), recursive: true });
  await c.call('fs/watchMissing', { watchId: 5, missing: [uri(path.join(dir, 'nope/x'))], present: null });
  // Retention expiry forgets exited processes.
  await waitFor(
    () => c.call('process/read', { processId: 'p0' }).then(() => false, () => true),
    { what: 'p0 forgotten after the 50 ms retention' },
  );
  await assert.rejects(c.call('process/read', { processId: 'p0' }), /unknown process id p0/);
  c.conn.close(); // closes handles + watches
  await s.shutdown();
  await waitFor(() => openFds() <= before + 2, { what: `descriptors back to ${before} (now ${openFds()})`, timeout: 10_000 });
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a closed process kept readable holds no OS handle of its child: 300 closed processes cost little heap', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const s = new ExecServer(); // closed processes stay readable for the default 30 s
  const c = await connectClient(s);
  const run = async (ids: string[]) => {
    for (const id of ids) await c.call('process/start', startParams(id, ['/bin/echo', id], { tty: id.endsWith('t') }));
    await c.sink.waitFor(() => ids.every((id) => c.sink.closed(id)), 60_000, 'all processes closed');
    c.sink.events.length = 0; // what the test's own sink recorded is not the server's
  };
  await run(['w0', 'w1t']); // lazily loaded modules and first-use state do not count
  gc();
  const before = process.memoryUsage().heapUsed;
  const ids = Array.from({ length: 300 }, (_, i) => (i % 10 === 0 ? `p${i}t` : `p${i}`));
  for (let i = 0; i < ids.length; i += 50) await run(ids.slice(i, i + 50));
  gc();
  const perProcess = (process.memoryUsage().heapUsed - before) / ids.length;
  // Each is still readable, output included.
  const r = (await c.call('process/read', { processId: 'p7' })) as { closed: boolean; chunks: { chunk: string }[] };
  assert.equal(r.closed, true);
  assert.equal(Buffer.from(r.chunks.map((x) => x.chunk).join(''), 'base64').toString(), 'p7\n');
  // Holding the ChildProcess, its pipes' sockets and their closures cost ~8 KiB per process.
  assert.ok(perProcess < 4096, `${Math.round(perProcess)} bytes of heap per closed process`);
  c.conn.close();
  await s.shutdown();
});
