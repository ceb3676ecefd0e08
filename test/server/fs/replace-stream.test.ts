// fs/open {mode: "replace"} + fs/writeBlock (attack tests): the bound, blocks out of order, after
// close, on another connection's handle, a directory swapped for a symlink mid-stream under a
// managed sandbox, a read-only sandbox; and the atomic replace this server promises (the
// reference truncates in place): a reader sees the old file or the whole new one, a stream that
// fails or is never closed leaves the old file and no temporary file behind.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { managedSandbox, pathEntry, specialEntry } from '../../../src/protocol/codex-sandbox';
import { ExecServer } from '../../../src/server/exec-server';
import { idleCollectorStats, startIdleCollector } from '../../../src/server/idle-gc';
import { LARGE_UPLOAD_BYTES } from '../../../src/server/upload-end';
import { b64, connectClient, rejectsWith, serverWithTmpDir, tmpDir, unb64, uri } from '../../support/server';
import { waitFor } from '../../support/wait';

const MiB = 1024 * 1024;
const leftovers = (dir: string) => readdirSync(dir).filter((n) => n.includes('exec-server-tmp'));

test('replace is atomic: readers see the old file until fs/close, then the whole new one; the mode is kept', async () => {
  const { c, dir, close } = await serverWithTmpDir();
  try {
    const f = path.join(dir, 'f.txt');
    writeFileSync(f, 'old content');
    chmodSync(f, 0o640);
    await c.call('fs/open', { handleId: 'h', path: uri(f), mode: 'replace' });
    const block = Buffer.alloc(MiB, 0x62);
    for (let i = 0; i < 8; i++) {
      await c.call('fs/writeBlock', { handleId: 'h', offset: i * MiB, chunk: b64(block) });
      assert.equal(unb64((await c.call('fs/readFile', { path: uri(f) })).dataBase64), 'old content', `a reader saw part of the stream after block ${i}`);
    }
    await c.call('fs/close', { handleId: 'h' });
    const now = readFileSync(f);
    assert.equal(now.length, 8 * MiB);
    assert.ok(now.every((b) => b === 0x62));
    assert.equal(statSync(f).mode & 0o777, 0o640, 'the replaced file kept its mode');
    assert.deepEqual(leftovers(dir), []);
  } finally {
    await close();
  }
});

test('a failed stream (readBlock on it, EBADF) and a stream never closed (the connection went away) leave the old file and no temporary file', async () => {
  const { c, dir, close } = await serverWithTmpDir();
  try {
    const f = path.join(dir, 'f.txt');
    writeFileSync(f, 'old');
    await c.call('fs/open', { handleId: 'h', path: uri(f), mode: 'replace' });
    await c.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: b64('half of the new') });
    await rejectsWith(c.call('fs/readBlock', { handleId: 'h', offset: 0, len: 4 }), -32603, 'Bad file descriptor (os error 9)');
    await rejectsWith(c.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: b64('x') }), -32004, 'unknown file handle `h`');
    await c.call('fs/close', { handleId: 'h' });
    assert.equal(readFileSync(f, 'utf8'), 'old');
    assert.deepEqual(leftovers(dir), []);

    const other = await connectClient(c.server);
    await other.call('fs/open', { handleId: 'g', path: uri(f), mode: 'replace' });
    await other.call('fs/writeBlock', { handleId: 'g', offset: 0, chunk: b64('never closed') });
    assert.equal(leftovers(dir).length, 1, 'the stream writes a temporary file beside the target');
    other.conn.close();
    await waitFor(() => leftovers(dir).length === 0, { what: 'the unclosed stream discarded' });
    assert.equal(readFileSync(f, 'utf8'), 'old');
  } finally {
    await close();
  }
});

test('writeBlock beyond the bound, out of order, after close, and on another connection\'s handle', async () => {
  const { c, dir, close } = await serverWithTmpDir();
  try {
    const f = path.join(dir, 'f.bin');
    await c.call('fs/open', { handleId: 'h', path: uri(f), mode: 'replace' });
    await rejectsWith(c.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: b64(Buffer.alloc(MiB + 1)) }), -32600, 'file write block length must be between 1 and 1048576');
    await rejectsWith(c.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: '' }), -32600, 'file write block length must be between 1 and 1048576');
    // Out of order: the last block first; each lands where its offset says.
    const blocks = [0, 1, 2, 3].map((i) => Buffer.alloc(MiB, 0x30 + i));
    for (const i of [3, 1, 0, 2]) await c.call('fs/writeBlock', { handleId: 'h', offset: i * MiB, chunk: b64(blocks[i]) });
    const thief = await connectClient(c.server);
    await rejectsWith(thief.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: b64('stolen') }), -32004, 'unknown file handle `h`');
    await rejectsWith(thief.call('fs/close', { handleId: 'h' }).then(() => thief.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: b64('x') })), -32004);
    await c.call('fs/close', { handleId: 'h' });
    assert.ok(readFileSync(f).equals(Buffer.concat(blocks)), 'the blocks as written, untouched by the other connection');
    await rejectsWith(c.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: b64('late') }), -32004, 'unknown file handle `h`');
    assert.ok(readFileSync(f).equals(Buffer.concat(blocks)), 'a block after close changed the file');
    assert.deepEqual(await c.call('fs/close', { handleId: 'h' }), {}, 'closing twice');
  } finally {
    await close();
  }
});

test('managed sandbox: a directory swapped for a symlink to outside mid-stream does not redirect the stream; a read-only sandbox refuses the open', async () => {
  const server = new ExecServer();
  const c = await connectClient(server);
  const base = tmpDir('es-fws-');
  try {
    const ws = path.join(base, 'ws');
    const outside = path.join(base, 'outside');
    mkdirSync(path.join(ws, 'd'), { recursive: true });
    mkdirSync(outside);
    const sandbox = managedSandbox({ entries: [specialEntry('root', 'read'), pathEntry(uri(ws), 'write')], cwd: uri(ws) });
    await c.call('fs/open', { handleId: 'h', path: uri(path.join(ws, 'd', 'f.txt')), mode: 'replace', sandbox });
    await c.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: b64('first ') });
    // What a sandboxed process may do inside its writable root: move d away, put a link in its place.
    renameSync(path.join(ws, 'd'), path.join(ws, 'd.orig'));
    symlinkSync(outside, path.join(ws, 'd'));
    await c.call('fs/writeBlock', { handleId: 'h', offset: 6, chunk: b64('second') });
    await c.call('fs/close', { handleId: 'h' });
    assert.deepEqual(readdirSync(outside), [], 'the stream wrote outside the writable root');
    assert.equal(readFileSync(path.join(ws, 'd.orig', 'f.txt'), 'utf8'), 'first second', 'the file landed in the directory that was checked');

    // Opening through the link now: the link leads outside every writable root.
    await rejectsWith(c.call('fs/open', { handleId: 'l', path: uri(path.join(ws, 'd', 'g.txt')), mode: 'replace', sandbox }), -32603, 'Read-only file system (os error 30)');
    const readOnly = managedSandbox({ entries: [specialEntry('root', 'read')], cwd: uri(ws) });
    writeFileSync(path.join(ws, 'kept.txt'), 'kept');
    await rejectsWith(c.call('fs/open', { handleId: 'r', path: uri(path.join(ws, 'kept.txt')), mode: 'replace', sandbox: readOnly }), -32603, 'Read-only file system (os error 30)');
    await rejectsWith(c.call('fs/writeBlock', { handleId: 'r', offset: 0, chunk: b64('x') }), -32004);
    assert.equal(readFileSync(path.join(ws, 'kept.txt'), 'utf8'), 'kept');
    assert.deepEqual([...leftovers(ws), ...leftovers(outside), ...leftovers(path.join(ws, 'd.orig'))], []);
  } finally {
    await server.shutdown();
  }
});

test('pipelined blocks (none awaited before the next is sent) land in arrival order: gaps read as NUL, overlaps overwrite; raw Buffers (binaryOutput, in process) and base64 mix', async () => {
  const { c, dir, close } = await serverWithTmpDir();
  try {
    const f = path.join(dir, 'f.bin');
    const open = c.call('fs/open', { handleId: 'h', path: uri(f), mode: 'replace' });
    // As the reference answers its sequential handling: "x"@10, "abc"@0, "def"@3, "again"@3.
    const writes = [
      c.call('fs/writeBlock', { handleId: 'h', offset: 10, chunk: Buffer.from('x') }),
      c.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: b64('abc') }),
      c.call('fs/writeBlock', { handleId: 'h', offset: 3, chunk: Buffer.from('def') }),
      c.call('fs/writeBlock', { handleId: 'h', offset: 3, chunk: b64('again') }),
    ];
    // Many contiguous blocks queued behind each other (coalesced into a few writev calls), each answered.
    const blocks = Array.from({ length: 64 }, (_, i) => Buffer.alloc(4096, i));
    const g = path.join(dir, 'g.bin');
    const openG = c.call('fs/open', { handleId: 'g', path: uri(g), mode: 'replace' });
    const gWrites = blocks.map((b, i) => c.call('fs/writeBlock', { handleId: 'g', offset: i * 4096, chunk: b }));
    const closes = [c.call('fs/close', { handleId: 'h' }), c.call('fs/close', { handleId: 'g' })];
    await open;
    await openG;
    for (const r of [...writes, ...gWrites]) assert.deepEqual(await r, {});
    await Promise.all(closes);
    assert.equal(readFileSync(f, 'latin1'), 'abcagain\0\0x');
    assert.ok(readFileSync(g).equals(Buffer.concat(blocks)));
    assert.deepEqual(leftovers(dir), []);
    // Raw bytes are taken for fs/writeBlock's chunk only: elsewhere they are refused like any wrong type.
    await rejectsWith(c.call('fs/writeFile', { path: uri(f), dataBase64: Buffer.from('x') }), -32602, 'invalid type: byte array, expected a string');
    await rejectsWith(c.call('fs/getMetadata', Buffer.from('{}')), -32602, /invalid type: byte array, expected struct/);
  } finally {
    await close();
  }
});

test('a failed write fails the blocks queued behind it and the stream; the old file stays', async () => {
  const { c, dir, close } = await serverWithTmpDir();
  try {
    const f = path.join(dir, 'f.txt');
    writeFileSync(f, 'old');
    await c.call('fs/open', { handleId: 'h', path: uri(f), mode: 'replace' });
    // Past the largest file size (EFBIG), then blocks right behind it, sent before it fails.
    const tooFar = 2 ** 52;
    const results = await Promise.allSettled([
      c.call('fs/writeBlock', { handleId: 'h', offset: 0, chunk: Buffer.from('new') }),
      c.call('fs/writeBlock', { handleId: 'h', offset: tooFar, chunk: Buffer.from('x') }),
      c.call('fs/writeBlock', { handleId: 'h', offset: tooFar + 1, chunk: Buffer.from('y') }),
      c.call('fs/writeBlock', { handleId: 'h', offset: tooFar + 2, chunk: Buffer.from('z') }),
    ]);
    assert.equal(results[0].status, 'fulfilled');
    for (const r of results.slice(1)) assert.equal(r.status, 'rejected', 'a block queued behind the failed write was answered as written');
    await rejectsWith(c.call('fs/writeBlock', { handleId: 'h', offset: 3, chunk: b64('later') }), -32004, 'unknown file handle `h`');
    await c.call('fs/close', { handleId: 'h' });
    assert.equal(readFileSync(f, 'utf8'), 'old');
    assert.deepEqual(leftovers(dir), []);
  } finally {
    await close();
  }
});

test('the end of a large upload (64 MiB through one replace stream, closed or dropped with its connection) asks the idle collector for the young generation back; a smaller one does not', async (t) => {
  // Looks a minute apart and no size at rest: only an upload's end releases here, whatever V8's
  // young generation is. Quiet below 50 % of the 200 ms after it (a loaded machine stretches the little this process does then).
  const stop = startIdleCollector({ intervalMs: 60_000, youngRestBytes: 0, idleUtilization: 0.5 });
  t.after(stop);
  const { c, dir, close } = await serverWithTmpDir();
  t.after(close);
  const block = Buffer.alloc(1024 * 1024, 7);
  const upload = async (handleId: string, mib: number) => {
    await c.call('fs/open', { handleId, path: uri(path.join(dir, `${handleId}.bin`)), mode: 'replace' });
    for (let i = 0; i < mib; i += 8) await Promise.all(Array.from({ length: Math.min(8, mib - i) }, (_, k) => c.call('fs/writeBlock', { handleId, offset: (i + k) * block.length, chunk: block })));
  };
  const releases0 = idleCollectorStats.youngReleases;
  const ends0 = idleCollectorStats.uploadEnds;
  await upload('small', LARGE_UPLOAD_BYTES / block.length - 1);
  await c.call('fs/close', { handleId: 'small' });
  // The stream reports its end before fs/close answers.
  assert.equal(idleCollectorStats.uploadEnds, ends0, 'one MiB short of the threshold: left to the looks');
  await upload('large', LARGE_UPLOAD_BYTES / block.length);
  await c.call('fs/close', { handleId: 'large' });
  assert.equal(idleCollectorStats.uploadEnds, ends0 + 1);
  assert.equal(statSync(path.join(dir, 'large.bin')).size, LARGE_UPLOAD_BYTES);
  await waitFor(() => idleCollectorStats.youngReleases > releases0, { what: 'the release after the closed upload', timeout: 5_000, interval: 20 });
  // Never closed: the stream is dropped with its connection, and that is an upload's end too.
  const other = await connectClient(c.server);
  await other.call('fs/open', { handleId: 'gone', path: uri(path.join(dir, 'gone.bin')), mode: 'replace' });
  for (let i = 0; i < LARGE_UPLOAD_BYTES / block.length; i++) await other.call('fs/writeBlock', { handleId: 'gone', offset: i * block.length, chunk: block });
  const releases1 = idleCollectorStats.youngReleases;
  other.conn.close();
  await waitFor(() => idleCollectorStats.youngReleases > releases1, { what: 'the release after the dropped upload', timeout: 5_000, interval: 20 });
  assert.deepEqual(leftovers(dir), []);
});
