// The CLI gives back, once, what its start took (src/server/idle-gc.ts, releaseStartHeap): V8
// grows its young generation from 1 to 4 MiB while the bundle loads, and before the release a
// server kept those 4 MiB through its first clients' work, as no idle second had come yet (RSS
// right after the bench's round trips ~2-3 MiB higher). Here: 1-2 MiB at rest, 2 MiB after a
// client's first 2 000 requests; on the build before the change, 2 MiB at rest a quarter second
// after the start and 4 MiB after the same requests (three runs each).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { cHeap } from '../../src/server/c-heap';
import { openRpc } from '../support/cli-servers';
import { startCli, stopAll } from '../support/cli';
import { removeTempDir, tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';

after(stopAll);

/** A --require probe: on SIGUSR2 it writes V8's committed young generation (bytes) to `<file>.<n>`. */
function probe(dir: string): { file: string; args: string[] } {
  const file = path.join(dir, 'young');
  const script = path.join(dir, 'probe.cjs');
  fs.writeFileSync(
    script,
    `let n = 0; process.on('SIGUSR2', () => require('fs').writeFileSync(${JSON.stringify(file)} + '.' + n++, String(require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size)));\n`,
  );
  return { file, args: ['--require', script] };
}

let asked = 0;
async function youngBytes(pid: number, file: string): Promise<number> {
  const out = `${file}.${asked++}`;
  process.kill(pid, 'SIGUSR2');
  await waitFor(() => fs.existsSync(out) && fs.readFileSync(out, 'utf8') !== '', { timeout: 10_000, what: `the probe's ${out}` });
  return Number(fs.readFileSync(out, 'utf8'));
}

const MiB = 1024 * 1024;

test('cli: the young generation the start grew is given back before the first client, and a client\'s first 2 000 requests do not grow it again', { skip: !cHeap()?.lowMemory && 'no native heap module here (glibc Linux builds have one)' }, async (t) => {
  const dir = tempDir('es-young-');
  t.after(() => removeTempDir(dir));
  const p = probe(dir);
  const server = await startCli([], { t, cwd: dir, nodeArgs: p.args });
  const atRest = await youngBytes(server.pid, p.file);
  assert.ok(atRest <= 2 * MiB, `young generation at rest: ${atRest / MiB} MiB`);
  const rpc = await openRpc(server.url);
  const target = path.join(dir, 'file.txt');
  fs.writeFileSync(target, 'x');
  for (let i = 0; i < 2000; i++) assert.ok((await rpc.call('fs/getMetadata', { path: `file://${target}` })).result);
  const afterWork = await youngBytes(server.pid, p.file);
  assert.ok(afterWork <= 2 * MiB, `young generation after 2 000 requests: ${afterWork / MiB} MiB`);
});
