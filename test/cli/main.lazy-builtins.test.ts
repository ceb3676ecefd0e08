// The bundled CLI (dist/cli.js) loads tls, https and zlib on first use, not at start
// (esbuild.mjs, lazyBuiltins): request traffic and a process's output do not load them, and a
// server that never serves TLS, fetches or compresses never pays their ~0.3 MiB of RSS. The
// first use still works through the lazy module: a process's output large enough to be
// deflated once it has exited (src/server/process/output-buffer.ts) reads back whole, and zlib
// is loaded then. On the bundle before the change, tls, https and zlib were loaded at start.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { openRpc, type RawRpc } from '../support/cli-servers';
import { startCli, stopAll } from '../support/cli';
import { removeTempDir, tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';

after(stopAll);

const LAZY = ['tls', 'https', 'zlib'];

/** A --require probe: on SIGUSR2 it writes the builtins loaded so far to `<file>.<n>`. */
function probe(dir: string): { file: string; args: string[] } {
  const file = path.join(dir, 'modules');
  const script = path.join(dir, 'probe.cjs');
  fs.writeFileSync(script, `let n = 0; process.on('SIGUSR2', () => require('fs').writeFileSync(${JSON.stringify(file)} + '.' + n++, JSON.stringify(process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)))));\n`);
  return { file, args: ['--require', script] };
}

let asked = 0;
/** The builtins the server has loaded now. */
async function loaded(pid: number, file: string): Promise<string[]> {
  const out = `${file}.${asked++}`;
  process.kill(pid, 'SIGUSR2');
  await waitFor(() => fs.existsSync(out), { timeout: 10_000, what: `the probe's ${out}` });
  return JSON.parse(fs.readFileSync(out, 'utf8')) as string[];
}

/** Runs `argv` to its end, waits for `settled` (when given), and reads all its output back from seq 0. */
async function runAndRead(rpc: RawRpc, id: string, argv: string[], dir: string, settled?: () => Promise<boolean>): Promise<string> {
  const start = await rpc.call('process/start', { processId: id, argv, cwd: `file://${dir}`, env: { PATH: '/usr/bin:/bin' }, tty: false });
  assert.ok(start.result, JSON.stringify(start));
  await waitFor(() => rpc.notifications.some((n) => n.method === 'process/exited' && (n.params as { processId: string }).processId === id), { what: `${id} to exit` });
  if (settled) await waitFor(settled, { timeout: 20_000, interval: 100, what: 'the retained output to be deflated (zlib loaded)' });
  return rpc.readOutput(id, { maxReads: 2000, waitMs: 100 });
}

const seq = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\n`).join('');

test('cli bundle: tls, https and zlib are not loaded by requests and output; zlib loads when retained output is deflated, and it reads back whole', async (t) => {
  const dir = tempDir('es-lazy-builtins-');
  t.after(() => removeTempDir(dir));
  const p = probe(dir);
  const server = await startCli([], { t, cwd: dir, nodeArgs: p.args });
  const rpc = await openRpc(server.url);
  const target = path.join(dir, 'file.txt');
  fs.writeFileSync(target, 'x');
  for (let i = 0; i < 50; i++) assert.ok((await rpc.call('fs/getMetadata', { path: `file://${target}` })).result);
  await Promise.all(Array.from({ length: 200 }, async () => assert.ok((await rpc.call('fs/getMetadata', { path: `file://${target}` })).result)));
  // Below the size that is deflated once the process has exited.
  assert.equal(await runAndRead(rpc, 'small', ['seq', '1', '2000'], dir), seq(2000));
  const atStart = await loaded(server.pid, p.file);
  assert.ok(atStart.includes('net') && atStart.includes('http'), `the probe sees the builtins: ${atStart.join(' ')}`);
  assert.deepEqual(LAZY.filter((m) => atStart.includes(m)), [], 'loaded by start, requests and a process');
  // ~1.1 MB of output, deflated a second after the exit (zlib through the lazy module: loaded
  // then, nothing else uses it here), then inflated again for this read.
  const packed = async () => (await loaded(server.pid, p.file)).includes('zlib');
  assert.equal(await runAndRead(rpc, 'large', ['seq', '1', '160000'], dir, packed), seq(160000));
  rpc.ws.close();
  await server.stop();
});
