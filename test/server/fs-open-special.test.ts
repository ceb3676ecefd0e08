// fs/open of something that is not a regular file must answer, not block: opening a FIFO
// for reading waits for a writer, which would pin a libuv thread-pool thread (4 of them
// serve every async fs call of the whole server) and never answer the request.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { type Client, rejectsWith, serverWithTmpDir, uri } from './helpers';

let c: Client;
let dir: string;
let close: (() => Promise<void>) | undefined;
before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
});
after(() => close?.());

test('fs/open of a FIFO is refused as not a file (as the reference), without waiting for a writer', { timeout: 10_000 }, async () => {
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  // More than the thread pool's 4 threads: if any open blocked, later fs calls would starve too.
  for (let i = 0; i < 6; i++) {
    await rejectsWith(c.call('fs/open', { handleId: `f${i}`, path: uri(fifo) }), -32600, `path \`${fifo}\` is not a file`);
  }
  assert.equal((await c.call('fs/getMetadata', { path: uri(dir) })).isDirectory, true);
});
