// src/server/exec-server.ts: no descriptor or process outlives its process, handle or watch, nor the server's shutdown.
import assert from 'node:assert/strict';
import fs from 'node:fs';
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
