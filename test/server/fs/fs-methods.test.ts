// src/server/fs/fs-methods.ts: the fs/* methods in process (round trips, errors, handles, watchMissing, FIFOs).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ExecServer } from '../../../src/server/exec-server';
import { b64, type Client, connectClient, rejectsWith, serverWithTmpDir, uri } from '../../support/server';

let c: Client;
let dir: string;
let close: (() => Promise<void>) | undefined;
before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
});
after(() => close?.());
const ENOENT = 'No such file or directory (os error 2)';

test('fs/writeFile + readFile round trip (binary, URI with spaces, plain absolute path)', async () => {
  const p = path.join(dir, 'a file.bin');
  const data = Buffer.from([0, 1, 2, 255, 10, 13]);
  assert.deepEqual(await c.call('fs/writeFile', { path: uri(p), dataBase64: data.toString('base64') }), {});
  assert.ok(uri(p).includes('%20'));
  assert.deepEqual(Buffer.from((await c.call('fs/readFile', { path: uri(p) })).dataBase64, 'base64'), data);
  assert.equal((await c.call('fs/readFile', { path: p })).dataBase64, data.toString('base64'), 'plain absolute path accepted');
  await c.call('fs/writeFile', { path: uri(p), dataBase64: b64('x') });
  assert.equal(fs.readFileSync(p, 'utf8'), 'x', 'truncates');
});

test('fs/readFile + writeFile errors', async () => {
  await rejectsWith(c.call('fs/readFile', { path: uri(path.join(dir, 'missing')) }), -32004, ENOENT);
  await rejectsWith(c.call('fs/readFile', { path: uri(dir) }), -32600, `path \`${dir}\` is not a file`);
  const sparse = path.join(dir, 'huge.sparse');
  fs.closeSync(fs.openSync(sparse, 'w'));
  fs.truncateSync(sparse, 200 * 1024 * 1024); // sparse: no real disk use
  await rejectsWith(c.call('fs/readFile', { path: uri(sparse) }), -32600, 'file is too large to read: limit is 134217728 bytes');
  fs.rmSync(sparse);
  await rejectsWith(c.call('fs/readFile', { path: 'relative/x' }), -32602, 'invalid URI: relative URL without a base');
  await rejectsWith(c.call('fs/readFile', { path: 'http://x/y' }), -32602, 'unsupported path URI scheme `http`');
  await rejectsWith(c.call('fs/readFile', { path: 'file://host/y' }), -32600, /is invalid on/);
  await rejectsWith(c.call('fs/readFile', { path: 5 }), -32602, 'invalid type: number, expected a string');
  await rejectsWith(c.call('fs/readFile', {}), -32602, 'missing field `path`');
  await rejectsWith(c.call('fs/writeFile', { path: uri(path.join(dir, 'w')), dataBase64: '!!!' }), -32600, 'fs/writeFile requires valid base64 dataBase64: Invalid symbol 33, offset 0.');
  await rejectsWith(c.call('fs/writeFile', { path: uri(path.join(dir, 'no/dir/w')), dataBase64: 'aGk=' }), -32004, ENOENT);
  await rejectsWith(c.call('fs/writeFile', { path: uri(dir), dataBase64: 'aGk=' }), -32603, 'Is a directory (os error 21)');
});

test('fs/createDirectory, getMetadata, canonicalize, readDirectory', async () => {
  const d = path.join(dir, 'm/n/o');
  assert.deepEqual(await c.call('fs/createDirectory', { path: uri(d) }), {});
  assert.deepEqual(await c.call('fs/createDirectory', { path: uri(d) }), {}, 'recursive default: existing ok');
  await rejectsWith(c.call('fs/createDirectory', { path: uri(d), recursive: false }), -32603, 'File exists (os error 17)');
  await rejectsWith(c.call('fs/createDirectory', { path: uri(path.join(dir, 'x/y')), recursive: false }), -32004, ENOENT);
  fs.writeFileSync(path.join(d, 'f.txt'), 'hello');
  fs.symlinkSync(path.join(d, 'f.txt'), path.join(d, 'link'));
  fs.symlinkSync(path.join(d, 'nowhere'), path.join(d, 'dangling'));
  const md = await c.call('fs/getMetadata', { path: uri(path.join(d, 'f.txt')), sandbox: null });
  assert.equal(md.isFile, true);
  assert.equal(md.isDirectory, false);
  assert.equal(md.isSymlink, false);
  assert.equal(md.size, 5);
  assert.ok(Math.abs(md.modifiedAtMs - Date.now()) < 600_000);
  const ml = await c.call('fs/getMetadata', { path: uri(path.join(d, 'link')) });
  assert.equal(ml.isSymlink, true);
  assert.equal(ml.isFile, true);
  await rejectsWith(c.call('fs/getMetadata', { path: uri(path.join(d, 'dangling')) }), -32004, ENOENT);
  assert.deepEqual(await c.call('fs/canonicalize', { path: uri(path.join(d, '..', 'o', 'link')) }), { path: uri(path.join(d, 'f.txt')) });
  await rejectsWith(c.call('fs/canonicalize', { path: uri(path.join(d, 'zzz')) }), -32004, ENOENT);
  fs.mkdirSync(path.join(d, 'sub'));
  const rd = await c.call('fs/readDirectory', { path: uri(d) });
  assert.deepEqual(rd.entries, [
    { fileName: 'f.txt', isDirectory: false, isFile: true },
    { fileName: 'link', isDirectory: false, isFile: true },
    { fileName: 'sub', isDirectory: true, isFile: false },
  ]);
  await rejectsWith(c.call('fs/readDirectory', { path: uri(path.join(d, 'f.txt')) }), -32603, 'Not a directory (os error 20)');
  await rejectsWith(c.call('fs/readDirectory', { path: uri(path.join(d, 'nope')) }), -32004, ENOENT);
});

test('fs/remove and fs/copy', async () => {
  const d = path.join(dir, 'rc');
  fs.mkdirSync(path.join(d, 'tree/inner'), { recursive: true });
  fs.writeFileSync(path.join(d, 'tree/inner/x'), 'x');
  fs.writeFileSync(path.join(d, 'src'), 'source');
  assert.deepEqual(await c.call('fs/copy', { sourcePath: uri(path.join(d, 'src')), destinationPath: uri(path.join(d, 'dst')), recursive: false }), {});
  assert.equal(fs.readFileSync(path.join(d, 'dst'), 'utf8'), 'source');
  await rejectsWith(
    c.call('fs/copy', { sourcePath: uri(path.join(d, 'tree')), destinationPath: uri(path.join(d, 'tree2')), recursive: false }),
    -32600,
    'fs/copy requires recursive: true when sourcePath is a directory',
  );
  await c.call('fs/copy', { sourcePath: uri(path.join(d, 'tree')), destinationPath: uri(path.join(d, 'tree2')), recursive: true });
  assert.equal(fs.readFileSync(path.join(d, 'tree2/inner/x'), 'utf8'), 'x');
  await rejectsWith(c.call('fs/copy', { sourcePath: uri(path.join(d, 'none')), destinationPath: uri(path.join(d, 'n2')), recursive: true }), -32004, ENOENT);
  await rejectsWith(c.call('fs/copy', { sourcePath: uri(path.join(d, 'src')), destinationPath: uri(path.join(d, 'n2')) }), -32602, 'missing field `recursive`');

  // Reference semantics: symlinks are copied as links; no copying a directory into itself; no special files.
  fs.symlinkSync(path.join(d, 'src'), path.join(d, 'link'));
  await c.call('fs/copy', { sourcePath: uri(path.join(d, 'link')), destinationPath: uri(path.join(d, 'link2')), recursive: false });
  assert.equal(fs.readlinkSync(path.join(d, 'link2')), path.join(d, 'src'));
  const intoSelf = 'fs/copy cannot copy a directory to itself or one of its descendants';
  await rejectsWith(c.call('fs/copy', { sourcePath: uri(path.join(d, 'tree')), destinationPath: uri(path.join(d, 'tree/inner/x2')), recursive: true }), -32600, intoSelf);
  await rejectsWith(c.call('fs/copy', { sourcePath: uri(path.join(d, 'tree')), destinationPath: uri(path.join(d, 'tree')), recursive: true }), -32600, intoSelf);
  execFileSync('mkfifo', [path.join(d, 'fifo')]);
  await rejectsWith(
    c.call('fs/copy', { sourcePath: uri(path.join(d, 'fifo')), destinationPath: uri(path.join(d, 'fifo2')), recursive: false }),
    -32600,
    'fs/copy only supports regular files, directories, and symlinks',
  );

  assert.deepEqual(await c.call('fs/remove', { path: uri(path.join(d, 'none')) }), {}, 'force default');
  await rejectsWith(c.call('fs/remove', { path: uri(path.join(d, 'none')), force: false }), -32004, ENOENT);
  await rejectsWith(c.call('fs/remove', { path: uri(path.join(d, 'tree')), recursive: false }), -32603, 'Directory not empty (os error 39)');
  await c.call('fs/remove', { path: uri(path.join(d, 'tree')) });
  assert.equal(fs.existsSync(path.join(d, 'tree')), false);
  await c.call('fs/remove', { path: uri(path.join(d, 'dst')), recursive: false });
  assert.equal(fs.existsSync(path.join(d, 'dst')), false);
});

test('fs/rename: atomic move, overwrite semantics', async () => {
  const d = path.join(dir, 'rn');
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, 'a'), 'A');
  fs.writeFileSync(path.join(d, 'b'), 'B');
  // Default overwrite=false: destination exists → error, nothing changes.
  await rejectsWith(c.call('fs/rename', { sourcePath: uri(path.join(d, 'a')), destinationPath: uri(path.join(d, 'b')) }), -32600, /already exists/);
  await rejectsWith(
    c.call('fs/rename', { sourcePath: uri(path.join(d, 'a')), destinationPath: uri(path.join(d, 'b')), overwrite: false }),
    -32600,
    /already exists/,
  );
  assert.equal(fs.readFileSync(path.join(d, 'a'), 'utf8'), 'A');
  assert.equal(fs.readFileSync(path.join(d, 'b'), 'utf8'), 'B');
  await c.call('fs/rename', { sourcePath: uri(path.join(d, 'a')), destinationPath: uri(path.join(d, 'b')), overwrite: true });
  assert.equal(fs.readFileSync(path.join(d, 'b'), 'utf8'), 'A');
  assert.equal(fs.existsSync(path.join(d, 'a')), false);
  await c.call('fs/rename', { sourcePath: uri(path.join(d, 'b')), destinationPath: uri(path.join(d, 'c')) });
  assert.equal(fs.readFileSync(path.join(d, 'c'), 'utf8'), 'A');
  fs.mkdirSync(path.join(d, 'd1'));
  fs.mkdirSync(path.join(d, 'd2'));
  await rejectsWith(c.call('fs/rename', { sourcePath: uri(path.join(d, 'd1')), destinationPath: uri(path.join(d, 'd2')) }), -32600, /already exists/);
  await c.call('fs/rename', { sourcePath: uri(path.join(d, 'd1')), destinationPath: uri(path.join(d, 'd3')) });
  assert.ok(fs.statSync(path.join(d, 'd3')).isDirectory());
  await rejectsWith(c.call('fs/rename', { sourcePath: uri(path.join(d, 'zz')), destinationPath: uri(path.join(d, 'yy')) }), -32004, ENOENT);
});

test('fs/open, readBlock, close: blocks, eof, errors, handle limit per connection', async () => {
  const f = path.join(dir, 'blocks');
  fs.writeFileSync(f, 'hello');
  assert.deepEqual(await c.call('fs/open', { handleId: 'h', path: uri(f) }), { handleId: 'h' });
  assert.deepEqual(await c.call('fs/readBlock', { handleId: 'h', offset: 0, len: 3 }), { chunk: b64('hel'), eof: false });
  assert.deepEqual(await c.call('fs/readBlock', { handleId: 'h', offset: 3, len: 100 }), { chunk: b64('lo'), eof: true });
  assert.deepEqual(await c.call('fs/readBlock', { handleId: 'h', offset: 50, len: 1 }), { chunk: '', eof: true });
  await rejectsWith(c.call('fs/readBlock', { handleId: 'h', offset: 0, len: 0 }), -32600, 'file read block length must be between 1 and 1048576');
  await rejectsWith(c.call('fs/readBlock', { handleId: 'h', offset: 0, len: 1048577 }), -32600, 'file read block length must be between 1 and 1048576');
  await rejectsWith(c.call('fs/readBlock', { handleId: 'h', offset: -1, len: 1 }), -32602, 'invalid number');
  await rejectsWith(c.call('fs/readBlock', { handleId: 'h', offset: 0, len: '1' }), -32602, /invalid type: string "1"/);
  await rejectsWith(c.call('fs/open', { handleId: 'h', path: uri(f) }), -32600, 'file handle `h` already exists');
  await rejectsWith(c.call('fs/open', { handleId: 'x'.repeat(33), path: uri(f) }), -32600, 'file handle ID must not exceed 32 bytes');
  await rejectsWith(c.call('fs/readBlock', { handleId: 'nope', offset: 0, len: 1 }), -32004, 'unknown file handle `nope`');
  await rejectsWith(c.call('fs/open', { handleId: 'd', path: uri(dir) }), -32600, `path \`${dir}\` is not a file`);
  await rejectsWith(c.call('fs/open', { handleId: 'm', path: uri(path.join(dir, 'missing')) }), -32004, ENOENT);
  assert.deepEqual(await c.call('fs/close', { handleId: 'h' }), {});
  assert.deepEqual(await c.call('fs/close', { handleId: 'h' }), {}, 'closing twice is fine');
  // Pipelined open + readBlock + close + readBlock on one handle run in order.
  const piped = await Promise.allSettled([
    c.call('fs/open', { handleId: 'p', path: uri(f) }),
    c.call('fs/readBlock', { handleId: 'p', offset: 0, len: 5 }),
    c.call('fs/close', { handleId: 'p' }),
    c.call('fs/readBlock', { handleId: 'p', offset: 0, len: 5 }),
  ]);
  assert.deepEqual(
    piped.map((x) => (x.status === 'fulfilled' ? x.value : (x.reason as Error).message)),
    [{ handleId: 'p' }, { chunk: b64('hello'), eof: false }, {}, 'unknown file handle `p`'],
  );
  await rejectsWith(c.call('fs/readBlock', { handleId: 'h', offset: 0, len: 1 }), -32004, 'unknown file handle `h`');

  // Limit: 128 per connection; another connection has its own budget.
  const s2 = new ExecServer();
  try {
    const c2 = await connectClient(s2);
    const opens = await Promise.allSettled(Array.from({ length: 130 }, (_, i) => c2.call('fs/open', { handleId: `h${i}`, path: uri(f) })));
    assert.equal(opens.filter((o) => o.status === 'fulfilled').length, 128);
    const bad = opens.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    assert.equal(bad.reason.message, 'at most 128 file handles may be open per connection');
    const c3 = await connectClient(s2);
    await c3.call('fs/open', { handleId: 'h0', path: uri(f) });
    await c2.call('fs/close', { handleId: 'h0' });
    await c2.call('fs/open', { handleId: 'again', path: uri(f) });
    // Large block read: 1 MiB exactly.
    const big = path.join(dir, 'big');
    fs.writeFileSync(big, Buffer.alloc(1024 * 1024 + 10, 7));
    await c3.call('fs/open', { handleId: 'big', path: uri(big) });
    const blk = await c3.call('fs/readBlock', { handleId: 'big', offset: 0, len: 1024 * 1024 });
    assert.equal(Buffer.from(blk.chunk, 'base64').length, 1024 * 1024);
    assert.equal(blk.eof, false);
  } finally {
    await s2.shutdown();
  }
});

test('fs/watchMissing → fs/missingChanged, and environmentConfig/read (what the Codex client sends)', async () => {
  const wm = path.join(dir, 'wm');
  fs.mkdirSync(wm);
  const target = path.join(wm, 'sub/deeper/config.toml');
  assert.deepEqual(await c.call('fs/watchMissing', { watchId: 1, missing: [uri(target)], present: null }), { watching: true });
  assert.deepEqual(await c.call('fs/watchMissing', { watchId: 1, missing: [uri(target)], present: null }), { watching: false }, 'id already active');
  await rejectsWith(c.call('fs/watchMissing', {}), -32602, 'missing field `watchId`');
  await rejectsWith(c.call('fs/watchMissing', { watchId: 's', missing: [] }), -32602, 'invalid type: string "s", expected usize');
  const notes = (id = 1) => c.sink.events.filter((e) => e.method === 'fs/missingChanged' && e.params.watchId === id);
  // Intermediate directories appear first: no notification yet, the watch moves down. Each step
  // ends with a sentinel watch (2 under sub, 3 under sub/deeper) that follows the same directories
  // on the same events: once it fired, watch 1 has re-checked too, and a wrong notification of it
  // would have come first.
  assert.deepEqual(await c.call('fs/watchMissing', { watchId: 2, missing: [uri(path.join(wm, 'sub/mark'))], present: null }), { watching: true });
  assert.deepEqual(await c.call('fs/watchMissing', { watchId: 3, missing: [uri(path.join(wm, 'sub/deeper/mark'))], present: null }), { watching: true });
  fs.mkdirSync(path.join(wm, 'sub'));
  fs.writeFileSync(path.join(wm, 'sub/mark'), '');
  await c.sink.waitFor(() => notes(2).length > 0, 10_000, 'the sentinel under sub');
  fs.mkdirSync(path.join(wm, 'sub/deeper'));
  fs.writeFileSync(path.join(wm, 'sub/deeper/mark'), '');
  await c.sink.waitFor(() => notes(3).length > 0, 10_000, 'the sentinel under sub/deeper');
  assert.equal(notes().length, 0);
  fs.writeFileSync(target, 'x = 1');
  await c.sink.waitFor(() => notes().length > 0, 10_000, 'fs/missingChanged');
  assert.deepEqual(notes()[0].params, { watchId: 1 });
  // Once fired the watch is gone: a change to the target after a later sentinel brings no second one.
  assert.deepEqual(await c.call('fs/watchMissing', { watchId: 4, missing: [uri(path.join(wm, 'sub/deeper/mark2'))], present: null }), { watching: true });
  fs.appendFileSync(target, '\n');
  fs.writeFileSync(path.join(wm, 'sub/deeper/mark2'), '');
  await c.sink.waitFor(() => notes(4).length > 0, 10_000, 'the sentinel after the target');
  assert.equal(notes().length, 1);
  // The id can be used again.
  assert.deepEqual(await c.call('fs/watchMissing', { watchId: 1, missing: [uri(path.join(wm, 'other'))], present: null }), { watching: true });
  await rejectsWith(
    c.call('environmentConfig/read', { cwd: uri(dir), configPaths: [], requirementsPaths: [] }),
    -32602,
    'at least one config or requirements path is required',
  );
  const cfg = await c.call('environmentConfig/read', { cwd: uri(dir), configPaths: [[uri(path.join(dir, 'config.toml'))]], requirementsPaths: [] });
  assert.deepEqual(cfg.config, { layers: [], cloudInsertionIndex: 0 });
  assert.deepEqual(cfg.requirements, { layers: [], cloudInsertionIndex: 0 });
  assert.match(cfg.userHomeDir, /^file:\/\//);
  assert.match(cfg.codexHomeDir, /^file:\/\//);
  assert.equal(typeof cfg.hostname, 'string');
});

// fs/open of something that is not a regular file must answer, not block: opening a FIFO
// for reading waits for a writer, which would pin a libuv thread-pool thread (4 of them
// serve every async fs call of the whole server) and never answer the request.
test('fs/open of a FIFO is refused as not a file (as the reference), without waiting for a writer', { timeout: 10_000 }, async () => {
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  // More than the thread pool's 4 threads: if any open blocked, later fs calls would starve too.
  for (let i = 0; i < 6; i++) {
    await rejectsWith(c.call('fs/open', { handleId: `f${i}`, path: uri(fifo) }), -32600, `path \`${fifo}\` is not a file`);
  }
  assert.equal((await c.call('fs/getMetadata', { path: uri(dir) })).isDirectory, true);
});
