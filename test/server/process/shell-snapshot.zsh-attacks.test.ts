// The attacks of shell-snapshot.attacks.test.ts on zsh snapshots (src/server/process/shell-snapshot.ts):
// a scopeId that is a path names no file; a ~/.zprofile that never returns, or prints 100 MB, is
// cut off and the start falls back to the plain login shell; a snapshot file replaced after capture
// (other content, a symlink) is never sourced; a state past 512 KiB falls back; and values or
// functions carrying shell code (command substitution, backquotes, a function body) come back as
// text, never run by the restoring `zsh -fc`.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CAPTURE_TIMEOUT_MS, MAX_SNAPSHOT_BYTES } from '../../../src/server/process/shell-snapshot';
import { pidsWith } from '../../support/process';
import { field, snap, snapshotFixture, writeZshFiles, zshPath, snapshotDirOf } from '../../support/shell-snapshot';

const ZPROFILE = 'echo zprofile-ran >&2\nexport ZRAND=$RANDOM\n';
const PROBE = 'echo "pwd=$PWD"; echo "rand=$ZRAND"';

/** The fixture with only ~/.zprofile (`profile`) as zsh's login file; undefined (skipped) without zsh. */
async function fixture(t: TestContext, profile = ZPROFILE) {
  const zsh = zshPath();
  if (!zsh) {
    t.skip('no zsh here (the unit tool stage installs it)');
    return undefined;
  }
  const f = await snapshotFixture(t);
  writeZshFiles(f.home, { '.zprofile': profile });
  return { ...f, zsh, z: (id: string) => snap(id, 'zsh', zsh) };
}

test('zsh: a scopeId that is a path names no file: hashed names in a private directory, gone at shutdown', async (t) => {
  const f = await fixture(t);
  if (!f) return;
  const scopes = ['../../x', 'a/b', `/${path.join(f.base, 'abs')}`, '..', '.'];
  const rands = new Set<string | undefined>();
  for (const s of scopes) {
    const r = await f.run([f.zsh, '-lc', PROBE], f.z(s));
    assert.equal(r.err, '', `${s}: a snapshot was used`);
    rands.add(field(r.out, 'rand'));
  }
  assert.equal(rands.size, scopes.length, 'each scope its own capture');
  const dir = snapshotDirOf(f.logs);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  const files = readdirSync(dir);
  assert.equal(files.length, scopes.length, files.join());
  for (const n of files) {
    assert.match(n, /^[0-9a-f]{64}\.sh$/);
    assert.equal(statSync(path.join(dir, n)).mode & 0o777, 0o600);
  }
  for (const p of [path.resolve(dir, '../../x'), path.resolve(dir, 'a/b'), path.join(f.base, 'abs'), path.resolve(f.work, '../../x')]) assert.ok(!existsSync(p) && !existsSync(`${p}.sh`), p);
  await f.server.shutdown();
  assert.ok(!existsSync(dir), 'removed at shutdown');
});

test('zsh: a ~/.zprofile that never returns: killed at the time limit, the start runs as a login shell', async (t) => {
  const marker = `98764${process.pid}`;
  const f = await fixture(t, `if [[ ! -e ~/hung ]]; then touch ~/hung; sleep ${marker}; fi\n${ZPROFILE}`);
  if (!f) return;
  const t0 = Date.now();
  const r = await f.run([f.zsh, '-lc', PROBE], f.z('H'));
  const took = Date.now() - t0;
  assert.ok(took >= CAPTURE_TIMEOUT_MS - 500 && took < CAPTURE_TIMEOUT_MS + 15_000, `took ${took} ms`);
  assert.equal(r.err, 'zprofile-ran\n', 'the fallback: a plain login shell');
  assert.ok(f.logs.some((l) => l.startsWith('warn') && l.includes(`ran past ${CAPTURE_TIMEOUT_MS} ms`) && l.includes('running the login shell')), f.logs.join('\n'));
  assert.deepEqual(pidsWith(`sleep ${marker}`), [], 'nothing of the capture left running');
});

test('zsh: a ~/.zprofile that prints 100 MB: cut off at the size limit, the start falls back', async (t) => {
  const f = await fixture(t, `if [[ ! -e ~/printed ]]; then touch ~/printed; head -c 100000000 /dev/zero; fi\n${ZPROFILE}`);
  if (!f) return;
  const t0 = Date.now();
  const r = await f.run([f.zsh, '-lc', PROBE], f.z('P'));
  assert.ok(Date.now() - t0 < CAPTURE_TIMEOUT_MS, `cut off by size, not time: ${Date.now() - t0} ms`);
  assert.equal(r.err, 'zprofile-ran\n');
  assert.ok(f.logs.some((l) => l.startsWith('warn') && l.includes('printed more than')), f.logs.join('\n'));
});

test('zsh: a snapshot file replaced after its capture is not sourced: other content, or a symlink to a planted script', async (t) => {
  const f = await fixture(t);
  if (!f) return;
  assert.equal((await f.run([f.zsh, '-lc', PROBE], f.z('W'))).err, '');
  const dir = snapshotDirOf(f.logs);
  const [file] = readdirSync(dir).map((n) => path.join(dir, n));
  writeFileSync(file, 'echo pwned-content\n', { mode: 0o600 });
  const swapped = await f.run([f.zsh, '-lc', PROBE], f.z('W'));
  assert.doesNotMatch(swapped.out, /pwned/);
  assert.equal(swapped.err, 'zprofile-ran\n', 'the login shell instead');
  assert.ok(f.logs.some((l) => l.includes('is not the one captured')), f.logs.join('\n'));
  assert.equal((await f.run([f.zsh, '-lc', PROBE], f.z('W'))).err, '', 'captured again');
  const [file2] = readdirSync(dir).map((n) => path.join(dir, n));
  const planted = path.join(f.base, 'planted.sh');
  writeFileSync(planted, 'echo pwned-link\n', { mode: 0o600 });
  rmSync(file2);
  symlinkSync(planted, file2);
  const linked = await f.run([f.zsh, '-lc', PROBE], f.z('W'));
  assert.doesNotMatch(linked.out, /pwned/);
  assert.equal(linked.err, 'zprofile-ran\n');
});

test('zsh: a state past the snapshot bound (600 KB of functions) falls back to the login shell', async (t) => {
  const f = await fixture(t, `${ZPROFILE}hugefn() { : '${'x'.repeat(600_000)}'; }\n`);
  if (!f) return;
  const r = await f.run([f.zsh, '-lc', 'whence -w hugefn >/dev/null && echo has-hugefn'], f.z('Z'));
  assert.equal(r.err, 'zprofile-ran\n');
  assert.equal(r.out, 'has-hugefn\n');
  assert.ok(f.logs.some((l) => l.startsWith('warn') && l.includes(`larger than ${MAX_SNAPSHOT_BYTES} bytes`)), f.logs.join('\n'));
});

test('zsh: values and functions carrying shell code are restored as text: no substitution, no function body runs', async (t) => {
  // Single quotes: the profile stores the code unexpanded; a restore that evaluated it would make the files.
  const payload = [
    `export ZSUB='$(touch ~/pwned-sub)'`,
    "export ZTICK='`touch ~/pwned-tick`'",
    `export ZQUOTE="'; touch ~/pwned-quote; '"`,
    `typeset -g ZPLAIN='$(touch ~/pwned-plain)'`,
    'zfn() { touch ~/pwned-fn; }',
    'alias zal="touch ~/pwned-alias"',
  ].join('\n');
  const f = await fixture(t, `${ZPROFILE}${payload}\n`);
  if (!f) return;
  const r = await f.run([f.zsh, '-lc', 'print -r -- "sub=$ZSUB"; print -r -- "tick=$ZTICK"; print -r -- "quote=$ZQUOTE"; whence -w zfn'], f.z('E'));
  assert.equal(r.err, '', 'a snapshot was used');
  assert.equal(field(r.out, 'sub'), '$(touch ~/pwned-sub)');
  assert.equal(field(r.out, 'tick'), '`touch ~/pwned-tick`');
  assert.equal(field(r.out, 'quote'), "'; touch ~/pwned-quote; '");
  assert.match(r.out, /^zfn: function$/m, 'the function is defined');
  const pwned = readdirSync(f.home).filter((n) => n.startsWith('pwned'));
  assert.deepEqual(pwned, [], 'nothing of the payload ran at capture or restore');
});
