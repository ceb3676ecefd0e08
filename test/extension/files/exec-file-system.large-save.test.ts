// Large saves through the FileSystemProvider's core (ExecFileSystem.writeFile): streamed with
// fs/open {mode: replace} + fs/writeBlock (64 KiB blocks) when the server advertises fileWriteStreaming, never
// one fs/writeFile holding the whole file as base64. Real servers over real websockets: this
// project's CLI (bytes, request pattern, memory) and every reference version (bytes).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { connectWebSocket } from '../../../src/client/connect';
import type { ClientTelemetry } from '../../../src/telemetry/api';
import { ExecFileSystem, type FsErrorFactory } from '../../../src/extension/files/exec-file-system';
import { startCli } from '../../support/cli';
import { referenceServers, startWsServer } from '../../support/reference';

const fail = (m: string) => new Error(m);
const errors: FsErrorFactory = { FileNotFound: fail, FileExists: fail, FileNotADirectory: fail, FileIsADirectory: fail, NoPermissions: fail, Unavailable: fail, Unknown: fail };
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');

test('a 192 MiB save through the provider streams 64 KiB blocks: bytes equal, the old file replaced, extension-side buffers +< 64 MiB, RSS +< 128 MiB', async (t) => {
  const dir = path.join(cacheDir, `large-save-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const server = await startCli([], { t });
  const requests: string[] = [];
  const counting: ClientTelemetry = { call: (method) => (requests.push(method), { end() {} }) };
  const client = await connectWebSocket(server.url, { reconnect: false, telemetry: counting });
  t.after(() => client.close());
  const provider = new ExecFileSystem({ getClient: async () => client }, errors);
  const target = path.join(dir, 'big.bin');
  writeFileSync(target, 'old contents');
  // What VS Code hands the provider: the whole content, already in memory (not counted below).
  const content = randomBytes(192 * 1024 * 1024);
  const expected = sha(content);
  global.gc?.();
  const base = process.memoryUsage();
  let peakRss = base.rss;
  let peakExternal = base.external + base.arrayBuffers;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakExternal = Math.max(peakExternal, m.external + m.arrayBuffers);
  }, 5);
  try {
    await provider.writeFile('env', target, content, { create: true, overwrite: true });
  } finally {
    clearInterval(sampler);
  }
  assert.equal(sha(readFileSync(target)), expected, 'the saved bytes');
  assert.ok(!requests.includes('fs/writeFile'), 'no whole-file fs/writeFile request');
  const blocks = requests.filter((m) => m === 'fs/writeBlock').length;
  assert.equal(blocks, 192 * 16, `64 KiB blocks: ${blocks}`);
  assert.deepEqual([requests.indexOf('fs/open') >= 0, requests[requests.length - 1]], [true, 'fs/close']);
  const MiB = 1024 * 1024;
  // A whole-file base64 request alone is 256 MiB (and over 64 MiB the websocket refuses it).
  // RSS also holds V8's heap growth before a major GC (the blocks' garbage strings: +38 to
  // +98 MiB measured under load), so its bound is half the whole-file string; the buffers
  // outside the heap are held to 64 MiB.
  assert.ok(peakRss - base.rss < 128 * MiB, `extension-side RSS grew by ${((peakRss - base.rss) / MiB).toFixed(1)} MiB`);
  assert.ok(peakExternal - (base.external + base.arrayBuffers) < 64 * MiB, `buffers grew by ${((peakExternal - base.external - base.arrayBuffers) / MiB).toFixed(1)} MiB`);
  // A small save is still one fs/writeFile.
  requests.length = 0;
  await provider.writeFile('env', path.join(dir, 'small.txt'), Buffer.from('small'), { create: true, overwrite: true });
  assert.deepEqual(requests.filter((m) => m.startsWith('fs/write') || m === 'fs/open'), ['fs/writeFile']);
  assert.equal(readFileSync(path.join(dir, 'small.txt'), 'utf8'), 'small');
});

test('a streamed save through the provider against every reference version: the same bytes land', async (t) => {
  const dir = path.join(cacheDir, `large-save-ref-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const content = randomBytes(5 * 1024 * 1024 + 123);
  for (const ref of referenceServers()) {
    const server = await startWsServer(ref, [], 30_000, t);
    const requests: string[] = [];
    const client = await connectWebSocket(server.url, { reconnect: false, telemetry: { call: (m) => (requests.push(m), { end() {} }) } });
    try {
      const provider = new ExecFileSystem({ getClient: async () => client }, errors);
      const target = path.join(dir, `${ref.name}.bin`);
      writeFileSync(target, 'old');
      await provider.writeFile('env', target, content, { create: true, overwrite: true });
      assert.equal(sha(readFileSync(target)), sha(content), `${ref.name}: the saved bytes`);
      assert.equal(requests.filter((m) => m === 'fs/writeBlock').length, 81, `${ref.name}: streamed in 64 KiB blocks`);
    } finally {
      await client.close();
      await server.stop();
    }
  }
});
