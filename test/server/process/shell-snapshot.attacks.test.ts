// Attacks on process/start.shellSnapshot (src/server/process/shell-snapshot.ts): a scopeId
// that is a path (`../../x`, `a/b`, absolute) never names a file (snapshots are named by a
// hash, in a 0700 directory, 0600 files); a profile that never returns, or prints 100 MB, is
// cut off (time and size bounds), as is a state past 512 KiB, and the start falls back to the
// plain login shell, saying so in the log, with nothing of the capture left running; a snapshot
// file replaced after capture (other content, a symlink) is never sourced; the files go when the
// server shuts down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CAPTURE_TIMEOUT_MS, MAX_SNAPSHOT_BYTES } from '../../../src/server/process/shell-snapshot';
import { pidsWith } from '../../support/process';
import { field, PROBE, PROFILE, snap, snapshotFixture as fixture, snapshotDirOf } from '../../support/shell-snapshot';

test('a scopeId that is a path names no file: snapshots are hashed names in a private directory, gone at shutdown', async (t) => {
  const { run, base, logs, server, work } = await fixture(t);
  const scopes = ['../../x', 'a/b', `/${path.join(base, 'abs')}`, '..', '.'];
  const rands = new Set<string | undefined>();
  for (const s of scopes) {
    const r = await run(['/bin/bash', '-lc', PROBE], snap(s));
    assert.equal(r.err, '', `${s}: a snapshot was used`);
    rands.add(field(r.out, 'rand'));
  }
  assert.equal(rands.size, scopes.length, 'each scope its own capture');
  const dir = snapshotDirOf(logs);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  const files = readdirSync(dir);
  assert.equal(files.length, scopes.length, files.join());
  for (const f of files) {
    assert.match(f, /^[0-9a-f]{64}\.sh$/);
    assert.equal(statSync(path.join(dir, f)).mode & 0o777, 0o600);
  }
  for (const p of [path.resolve(dir, '../../x'), path.resolve(dir, 'a/b'), path.join(base, 'abs'), path.resolve(work, '../../x')]) assert.ok(!existsSync(p) && !existsSync(`${p}.sh`), p);
  await server.shutdown();
  assert.ok(!existsSync(dir), 'removed at shutdown');
});

test('a profile that never returns: the capture is killed at its time limit, the start runs as a login shell, the log says why', async (t) => {
  const marker = `98765${process.pid}`;
  // Hangs only the first time (the capture); the fallback login shell then runs it quickly.
  const { run, logs } = await fixture(t, `if [ ! -e ~/hung ]; then touch ~/hung; sleep ${marker}; fi\n${PROFILE}`);
  const t0 = Date.now();
  const r = await run(['/bin/bash', '-lc', PROBE], snap('H'));
  const took = Date.now() - t0;
  assert.ok(took >= CAPTURE_TIMEOUT_MS - 500 && took < CAPTURE_TIMEOUT_MS + 15_000, `took ${took} ms`);
  assert.equal(r.err, 'profile-ran\n', 'the fallback: a plain login shell');
  assert.equal(field(r.out, 'pwd'), '/tmp');
  assert.ok(logs.some((l) => l.startsWith('warn') && l.includes(`ran past ${CAPTURE_TIMEOUT_MS} ms`) && l.includes('running the login shell')), logs.join('\n'));
  assert.deepEqual(pidsWith(`sleep ${marker}`), [], 'nothing of the capture left running');
});

test('a profile that prints 100 MB: the capture is cut off at its size limit, the start falls back', async (t) => {
  const { run, logs } = await fixture(t, `if [ ! -e ~/printed ]; then touch ~/printed; head -c 100000000 /dev/zero; fi\n${PROFILE}`);
  const t0 = Date.now();
  const r = await run(['/bin/bash', '-lc', PROBE], snap('P'));
  assert.ok(Date.now() - t0 < CAPTURE_TIMEOUT_MS, `cut off by size, not time: ${Date.now() - t0} ms`);
  assert.equal(r.err, 'profile-ran\n');
  assert.ok(logs.some((l) => l.startsWith('warn') && l.includes('printed more than')), logs.join('\n'));
});

test('a snapshot file replaced after its capture is not sourced: other content, or a symlink to a planted script', async (t) => {
  const { run, logs, base } = await fixture(t);
  const first = await run(['/bin/bash', '-lc', PROBE], snap('W'));
  assert.equal(first.err, '');
  const dir = snapshotDirOf(logs);
  const [file] = readdirSync(dir).map((f) => path.join(dir, f));
  // Same owner, same mode, other text.
  writeFileSync(file, 'echo pwned-content\n', { mode: 0o600 });
  const swapped = await run(['/bin/bash', '-lc', PROBE], snap('W'));
  assert.doesNotMatch(swapped.out, /pwned/);
  assert.equal(swapped.err, 'profile-ran\n', 'the login shell instead');
  assert.ok(logs.some((l) => l.includes('is not the one captured')), logs.join('\n'));
  // Captured again, then replaced by a link to a script elsewhere.
  const recaptured = await run(['/bin/bash', '-lc', PROBE], snap('W'));
  assert.equal(recaptured.err, '');
  const [file2] = readdirSync(dir).map((f) => path.join(dir, f));
  const planted = path.join(base, 'planted.sh');
  writeFileSync(planted, 'echo pwned-link\n', { mode: 0o600 });
  rmSync(file2);
  symlinkSync(planted, file2);
  const linked = await run(['/bin/bash', '-lc', PROBE], snap('W'));
  assert.doesNotMatch(linked.out, /pwned/);
  assert.equal(linked.err, 'profile-ran\n');
});

test('a profile whose state passes the snapshot bound (600 KB of functions) falls back to the login shell', async (t) => {
  const { run, logs } = await fixture(t, `${PROFILE}hugefn() { : '${'x'.repeat(600_000)}'; }\n`);
  const r = await run(['/bin/bash', '-lc', 'type hugefn >/dev/null && echo has-hugefn'], snap('Z'));
  assert.equal(r.err, 'profile-ran\n');
  assert.equal(r.out, 'has-hugefn\n');
  assert.ok(logs.some((l) => l.startsWith('warn') && l.includes(`larger than ${MAX_SNAPSHOT_BYTES} bytes`)), logs.join('\n'));
});
