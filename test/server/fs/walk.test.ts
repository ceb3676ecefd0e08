// src/server/fs/walk.ts and watch.ts: fs/walk (order, pruning, URIs, limits, links) and fs/watch notifications.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { type Client, rejectsWith, serverWithTmpDir, uri } from '../../support/server';
import { openRpc } from '../../support/cli-servers';
import { ourWsServer } from '../../support/flow';
import { waitFor } from '../../support/wait';

let c: Client;
let dir: string;
let close: (() => Promise<void>) | undefined;
before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
  // t/.hid/r  t/a/aa/x  t/a/y  t/b/.h/q  t/b/z  t/c  + symlinks
  for (const d of ['t/.hid', 't/a/aa', 't/b/.h']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  for (const f of ['t/.hid/r', 't/a/aa/x', 't/a/y', 't/b/.h/q', 't/b/z', 't/c']) fs.writeFileSync(path.join(dir, f), f);
});
after(() => close?.());
const opts = (o: Record<string, unknown> = {}) => ({ maxDepth: 5, maxDirectories: 100, maxEntries: 100, followDirectorySymlinks: false, ...o });
const rel = (r: any) => r.entries.map((e: any) => `${e.kind[0]}:${e.path.slice(uri(dir).length + 1)}`);

test('fs/walk: breadth-first, sorted, depth/hidden pruning (shapes as the reference)', async () => {
  const t = uri(path.join(dir, 't'));
  const all = await c.call('fs/walk', { path: t, options: opts() });
  assert.deepEqual(rel(all), ['d:t/.hid', 'd:t/a', 'd:t/b', 'f:t/c', 'f:t/.hid/r', 'd:t/a/aa', 'f:t/a/y', 'd:t/b/.h', 'f:t/b/z', 'f:t/a/aa/x', 'f:t/b/.h/q']);
  assert.equal(all.truncated, false);
  assert.deepEqual(all.errors, []);
  const pruned = await c.call('fs/walk', { path: t, options: opts({ pruneHiddenDirectories: true }) });
  assert.deepEqual(rel(pruned), ['d:t/.hid', 'd:t/a', 'd:t/b', 'f:t/c', 'd:t/a/aa', 'f:t/a/y', 'd:t/b/.h', 'f:t/b/z', 'f:t/a/aa/x']);
  const d0 = await c.call('fs/walk', { path: t, options: opts({ maxDepth: 0 }) });
  assert.deepEqual(rel(d0), ['d:t/.hid', 'd:t/a', 'd:t/b', 'f:t/c']);
  assert.equal(d0.truncated, false);
  const dirs2 = await c.call('fs/walk', { path: t, options: opts({ maxDirectories: 2 }) });
  assert.deepEqual(rel(dirs2), ['d:t/.hid', 'd:t/a', 'd:t/b', 'f:t/c', 'f:t/.hid/r']);
  assert.equal(dirs2.truncated, true);
  const ent3 = await c.call('fs/walk', { path: t, options: opts({ maxEntries: 3 }) });
  assert.equal(ent3.entries.length, 3);
  assert.equal(ent3.truncated, true);
  const file = await c.call('fs/walk', { path: uri(path.join(dir, 't/c')), options: opts() });
  assert.deepEqual(file, { entries: [], errors: [], truncated: false });
});

test('fs/walk: entry URIs are pathToFileURL of the entry, for names that need encoding and roots given with a trailing slash or an empty segment', async () => {
  // The walk builds each URI from its directory's URI plus one encoded segment; every name
  // here is one pathToFileURL percent-encodes (or leaves alone) in its own way.
  const names = ['a b', '%41', '#x', '?q', 'é', 'ü\u0301', '日本', 'tab\tx', 'nl\nx', 'cr\rx', 'back\\slash', '[x]', '{y}', '"q"', 'semi;colon', '`t`', '^c', '|p', '<>', 'plus+eq=', "it's", '~tilde', '.dot', '..dots', '-'];
  const root = path.join(dir, 'enc');
  fs.mkdirSync(root);
  for (const n of names) fs.writeFileSync(path.join(root, n), '');
  fs.mkdirSync(path.join(root, 'é dir', '#sub%'), { recursive: true });
  fs.writeFileSync(path.join(root, 'é dir', '#sub%', 'f ?'), '');
  const expected = [...names.map((n) => path.join(root, n)), path.join(root, 'é dir'), path.join(root, 'é dir', '#sub%'), path.join(root, 'é dir', '#sub%', 'f ?')].map((p) => pathToFileURL(p).href).sort();
  for (const given of [uri(root), `${uri(root)}/`, `${root}/`, root.replace(/\/enc$/, '//enc')]) {
    const r = await c.call('fs/walk', { path: given, options: opts() });
    assert.deepEqual(r.entries.map((e: any) => e.path).sort(), expected, given);
    assert.deepEqual(r.errors, []);
  }
  // Over a websocket the entries travel as the JSON text the walk built (src/rpc/verbatim.ts
  // JsonText): the same answer, parsed by a plain JSON client, for every one of these names.
  const wire = await ourWsServer();
  try {
    const rpc = await openRpc(wire.url);
    const inProcess = await c.call('fs/walk', { path: uri(root), options: opts() });
    const overWire = await rpc.call('fs/walk', { path: uri(root), options: opts() });
    assert.deepEqual(overWire.result, inProcess);
    assert.deepEqual((overWire.result as any).entries.map((e: any) => e.path).sort(), expected);
    rpc.ws.close();
  } finally {
    await wire.stop();
  }
});

test('fs/walk over a wire: a file name cannot inject JSON into the answer', async () => {
  // Names built to close the entry's string early and add an entry of their own, were a name
  // written into the answer's text unescaped.
  const root = path.join(dir, 'inject');
  const evil = ['x","kind":"file"},{"path":"planted', 'y\\","kind":"directory"},{"path":"planted2', 'z\u2028\u0000\u001f"]}', '\ud800'.normalize()];
  fs.mkdirSync(root);
  const made: string[] = [];
  for (const n of evil) {
    try {
      fs.writeFileSync(path.join(root, n), '');
      made.push(n);
    } catch {
      // a name this file system refuses (NUL): not a name a walk can meet
    }
  }
  assert.ok(made.length >= 3);
  const wire = await ourWsServer();
  try {
    const rpc = await openRpc(wire.url);
    const r = (await rpc.call('fs/walk', { path: uri(root), options: opts() })).result as any;
    assert.deepEqual(r.entries.map((e: any) => e.path).sort(), made.map((n) => pathToFileURL(path.join(root, n)).href).sort());
    assert.ok(r.entries.every((e: any) => e.kind === 'file' && e.path.startsWith(uri(root) + '/')));
    rpc.ws.close();
  } finally {
    await wire.stop();
  }
});

test('fs/walk: limits and bad input', async () => {
  const t = uri(path.join(dir, 't'));
  const tooBig = 'filesystem walk limits exceed maximums: depth=64, directories=10000, entries=50000';
  await rejectsWith(c.call('fs/walk', { path: t, options: opts({ maxDepth: 65 }) }), -32600, tooBig);
  await rejectsWith(c.call('fs/walk', { path: t, options: opts({ maxDirectories: 10_001 }) }), -32600, tooBig);
  await rejectsWith(c.call('fs/walk', { path: t, options: opts({ maxEntries: 50_001 }) }), -32600, tooBig);
  await rejectsWith(c.call('fs/walk', { path: t, options: opts({ maxDirectories: 0 }) }), -32600, 'filesystem walk limits must be greater than zero');
  await rejectsWith(c.call('fs/walk', { path: t, options: opts({ maxEntries: 0 }) }), -32600, 'filesystem walk limits must be greater than zero');
  await rejectsWith(c.call('fs/walk', { path: t, options: opts({ maxDepth: -1 }) }), -32602, 'invalid number');
  await rejectsWith(c.call('fs/walk', { path: t }), -32602, 'missing field `options`');
  const o = opts();
  delete (o as any).followDirectorySymlinks;
  await rejectsWith(c.call('fs/walk', { path: t, options: o }), -32602, 'missing field `followDirectorySymlinks`');
  await rejectsWith(c.call('fs/walk', { path: uri(path.join(dir, 'missing')), options: opts() }), -32004, 'No such file or directory (os error 2)');
  await rejectsWith(c.call('fs/walk', { path: 'rel', options: opts() }), -32602, 'invalid URI: relative URL without a base');
});

test('fs/walk: symlinks skipped unless following directory symlinks; cycles not re-entered', async () => {
  const s = path.join(dir, 's');
  fs.mkdirSync(path.join(s, 'd'), { recursive: true });
  fs.writeFileSync(path.join(s, 'f'), '');
  fs.symlinkSync(path.join(s, 'f'), path.join(s, 'lf'));
  fs.symlinkSync(s, path.join(s, 'd', 'loop'));
  fs.symlinkSync(path.join(s, 'nowhere'), path.join(s, 'dangling'));
  const noFollow = await c.call('fs/walk', { path: uri(s), options: opts() });
  assert.deepEqual(rel(noFollow), ['d:s/d', 'f:s/f']);
  const follow = await c.call('fs/walk', { path: uri(s), options: opts({ followDirectorySymlinks: true }) });
  assert.deepEqual(rel(follow), ['d:s/d', 'f:s/f', 'd:s/d/loop']);
  assert.equal(follow.truncated, false);
});

test('fs/walk: a subdirectory that cannot be read is a per-path error, not fatal', async () => {
  const u = path.join(dir, 'u');
  fs.mkdirSync(u, { recursive: true });
  fs.writeFileSync(path.join(u, 'ok.txt'), 'ok');
  if (process.getuid?.() !== 0) {
    // Unprivileged: a directory without permissions.
    fs.mkdirSync(path.join(u, 'locked'));
    fs.chmodSync(path.join(u, 'locked'), 0);
    try {
      const r = await c.call('fs/walk', { path: uri(u), options: opts() });
      assert.equal(r.errors.length, 1);
      assert.match(r.errors[0].message, /Permission denied/);
      assert.ok(rel(r).includes('f:u/ok.txt'));
    } finally {
      fs.chmodSync(path.join(u, 'locked'), 0o755);
    }
    return;
  }
  // Root reads everything, so make the error another way: a directory whose absolute path is
  // longer than PATH_MAX (built with relative mkdirs) cannot be opened (ENAMETOOLONG).
  const name = 'n'.repeat(250);
  let cur = u;
  const cwd = process.cwd();
  try {
    process.chdir(u);
    for (let i = 0; i < 18; i++) {
      fs.mkdirSync(name);
      process.chdir(name);
      cur += '/' + name;
    }
  } finally {
    process.chdir(cwd);
  }
  assert.ok(cur.length > 4096);
  const r = await c.call('fs/walk', { path: uri(u), options: opts({ maxDepth: 30 }) });
  assert.ok(rel(r).includes('f:u/ok.txt'), 'the rest of the walk still arrives');
  assert.ok(r.errors.length >= 1, 'the unreadable directory is reported');
  assert.match(r.errors[0].message, /too long/i);
  // Clean up from the inside out with relative paths (absolute ones are too long to remove).
  const rmDeep = (d: string, depth: number) => {
    process.chdir(d);
    try {
      if (depth > 1) rmDeep(name, depth - 1);
    } finally {
      process.chdir('..');
    }
    fs.rmdirSync(d);
  };
  try {
    process.chdir(u);
    rmDeep(name, 18);
  } finally {
    process.chdir(cwd);
  }
});

test('fs/walk: directory limit on a wide tree reports truncated', async () => {
  const w = path.join(dir, 'wide');
  for (let i = 0; i < 30; i++) fs.mkdirSync(path.join(w, `d${String(i).padStart(2, '0')}`, 'x'), { recursive: true });
  const r = await c.call('fs/walk', { path: uri(w), options: opts({ maxDirectories: 10 }) });
  assert.equal(r.truncated, true);
  // root + 9 subdirectories read: all 30 children listed, plus 9 grandchildren.
  assert.equal(r.entries.length, 39);
});

test('fs/watch: created/changed/deleted notifications as file URIs; unwatch stops them', async () => {
  const w = path.join(dir, 'watched');
  fs.mkdirSync(w);
  const got = () => c.sink.events.filter((e) => e.method === 'fs/changed' && e.params.watchId === 'w1').flatMap((e) => e.params.changes);
  assert.deepEqual(await c.call('fs/watch', { watchId: 'w1', path: uri(w), recursive: false }), { watchId: 'w1' });
  await rejectsWith(c.call('fs/watch', { watchId: 'w1', path: uri(w) }), -32600, 'watch `w1` already exists');
  const f = path.join(w, 'new.txt');
  fs.writeFileSync(f, 'a');
  await c.sink.waitFor(() => got().some((x: any) => x.path === uri(f) && x.kind === 'created'), 10_000, 'created');
  // The created notification was flushed: the append below starts a new burst.
  fs.appendFileSync(f, 'b');
  await c.sink.waitFor(() => got().some((x: any) => x.path === uri(f) && x.kind === 'changed'), 10_000, 'changed');
  fs.unlinkSync(f);
  await c.sink.waitFor(() => got().some((x: any) => x.path === uri(f) && x.kind === 'deleted'), 10_000, 'deleted');
  // A burst of writes is coalesced into few notifications.
  const before = c.sink.events.filter((e) => e.method === 'fs/changed').length;
  const g = path.join(w, 'burst');
  for (let i = 0; i < 50; i++) fs.appendFileSync(g, 'x');
  await c.sink.waitFor(() => got().some((x: any) => x.path === uri(g)), 10_000, 'burst');
  // A sentinel after the burst, on the same watcher: its events come after all of the burst's, so
  // once it is reported every late notification of the burst has been counted.
  const mark = path.join(w, 'mark');
  fs.writeFileSync(mark, 'x');
  await c.sink.waitFor(() => got().some((x: any) => x.path === uri(mark)), 10_000, 'the sentinel');
  const burstNotes = c.sink.events.filter((e) => e.method === 'fs/changed').length - before;
  assert.ok(burstNotes < 10, `${burstNotes} notifications for 50 writes (and the sentinel)`);
  // A second watch of the same directory sees the write after the unwatch: the first would have
  // been told of it on the same inotify event, so none of it has come once the second's has.
  await c.call('fs/watch', { watchId: 'w-mark', path: uri(w), recursive: false });
  assert.deepEqual(await c.call('fs/unwatch', { watchId: 'w1' }), {});
  const n = got().length;
  const after = path.join(w, 'after-unwatch');
  fs.writeFileSync(after, 'x');
  const sentinel = () => c.sink.events.some((e) => e.method === 'fs/changed' && e.params.watchId === 'w-mark' && e.params.changes.some((x: any) => x.path === uri(after)));
  await c.sink.waitFor(sentinel, 10_000, 'the second watch');
  await c.call('fs/getMetadata', { path: uri(w) }); // one more round trip for a first watch's flush a moment behind
  assert.equal(got().length, n);
  await c.call('fs/unwatch', { watchId: 'w-mark' });
  await rejectsWith(c.call('fs/watch', { watchId: 'w2', path: uri(path.join(dir, 'missing')) }), -32004, 'No such file or directory (os error 2)');
});

test('fs/watch recursive sees nested changes', async () => {
  const w = path.join(dir, 'rwatch');
  fs.mkdirSync(path.join(w, 'deep/er'), { recursive: true });
  await c.call('fs/watch', { watchId: 'rw', path: uri(w), recursive: true });
  const f = path.join(w, 'deep/er/file');
  // The nested watches are armed asynchronously: write until a change is seen (rather than guess a delay).
  await waitFor(
    () => {
      fs.writeFileSync(f, 'x');
      return c.sink.events.some((e) => e.method === 'fs/changed' && e.params.watchId === 'rw' && e.params.changes.some((x: any) => x.path === uri(f)));
    },
    { what: 'nested change', interval: 100 },
  );
  await c.call('fs/unwatch', { watchId: 'rw' });
});
