// process/start.shellSnapshot (src/server/process/shell-snapshot.ts) with a real bash and a
// HOME whose ~/.bash_profile prints to stderr, exports a random value, defines a function and
// an alias and runs `cd /tmp`: every row of REFERENCE-CAPABILITIES §4.1 (no snapshot, first
// use, same scope, another scope, a sandboxed start, `-c`, a shell.path not argv[0], a
// non-shell argv), the request's env winning over captured values, one capture for concurrent
// first uses, the -32602 of an unknown shell, a state larger than one environment string, and
// the advertised capability; zsh with its four login files (which run, what comes back, the
// state's carriers unset before S, a state larger than one environment string).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sandboxSupport } from '../../../src/server/sandbox/support';
import { managedSandbox, specialEntry } from '../../../src/protocol/codex-sandbox';
import { connectClient, rejectsWith, uri } from '../../support/server';
import { field, PROBE, PROFILE, snap, snapshotFixture as fixture, writeZshFiles, ZSH_PROBE, zshPath } from '../../support/shell-snapshot';

test('a login shell with a snapshot: the profile runs once per scope, silently, and its cwd does not leak; other starts run unchanged', async (t) => {
  const { work, run, logs, c } = await fixture(t);
  const info = (await c.call('environment/info', {})) as { capabilities: Record<string, boolean> };
  assert.equal(info.capabilities.shellSnapshotV2, process.platform === 'linux');

  const plain = await run(['/bin/bash', '-lc', PROBE]);
  assert.equal(plain.err, 'profile-ran\n', 'without a snapshot the profile runs');
  assert.equal(field(plain.out, 'pwd'), '/tmp', "without a snapshot the profile's cd holds");

  const first = await run(['/bin/bash', '-lc', PROBE], snap('A'));
  assert.equal(first.err, '', 'the capture is silent');
  assert.equal(field(first.out, 'pwd'), work, 'cwd stays the requested one');
  assert.match(first.out, /^fn:x$/m);
  assert.match(first.out, /^aliased$/m);
  const rand = field(first.out, 'rand');
  assert.ok(rand && rand !== field(plain.out, 'rand'), first.out);

  const again = await run(['/bin/bash', '-lc', PROBE], snap('A'));
  assert.deepEqual(again, first, 'the same scope: the same state, nothing re-run');

  const other = await run(['/bin/bash', '-lc', PROBE], snap('B'));
  assert.equal(other.err, '');
  assert.notEqual(field(other.out, 'rand'), rand, 'another scope captures afresh');

  const nonLogin = await run(['/bin/bash', '-c', PROBE], snap('A'));
  assert.match(nonLogin.out, /^nofn$/m, '-c: no snapshot, the function is missing');
  assert.equal(field(nonLogin.out, 'rand'), '');

  const mismatch = await run(['/bin/bash', '-lc', PROBE], snap('A', 'zsh', '/bin/zsh'));
  assert.equal(mismatch.err, 'profile-ran\n', 'shell.path not argv[0]: a normal login shell');
  assert.equal(field(mismatch.out, 'pwd'), '/tmp');

  const env = await run(['/usr/bin/env'], snap('A'));
  assert.equal(env.out.split('\n').filter(Boolean).sort().join(','), `HOME=${path.dirname(work)}/home,PATH=/usr/bin:/bin`, 'a non-shell argv runs unchanged');

  const extra = await run(['/bin/bash', '-lc', 'echo "$0 $1 rand=$SNAP_RAND"', 'zero', 'one'], snap('A'));
  assert.equal(extra.out, `zero one rand=${rand}\n`, 'the arguments after the script stay');

  const overridden = await run(['/bin/bash', '-lc', PROBE], { ...snap('A'), env: { PATH: '/usr/bin:/bin', HOME: path.dirname(work) + '/home', SNAP_RAND: 'mine' } });
  assert.equal(field(overridden.out, 'rand'), 'mine', "the request's env wins over the captured value");

  assert.equal(logs.filter((l) => l.includes('captured')).length, 2, logs.join('\n'));
  await rejectsWith(c.call('process/start', { processId: 'fish', argv: ['/bin/bash', '-lc', 'true'], cwd: uri(work), env: {}, tty: false, ...snap('F', 'fish', '/bin/bash') }), -32602, 'shell snapshots are unsupported for shell `fish`');
});

test('concurrent first starts of one scope capture once and see the same state', async (t) => {
  const { run, logs } = await fixture(t);
  const all = await Promise.all([1, 2, 3, 4].map(() => run(['/bin/bash', '-lc', PROBE], snap('C'))));
  const rands = new Set(all.map((r) => field(r.out, 'rand')));
  assert.equal(rands.size, 1, all.map((r) => r.out).join('\n'));
  assert.equal(logs.filter((l) => l.includes('captured')).length, 1, logs.join('\n'));
});

test('a new session captures afresh; a cwd or an envPolicy of its own is a scope of its own', async (t) => {
  const { run, server, base } = await fixture(t);
  const a = field((await run(['/bin/bash', '-lc', PROBE], snap('S'))).out, 'rand');
  const other = await connectClient(server);
  const b = field((await run(['/bin/bash', '-lc', PROBE], snap('S'), other)).out, 'rand');
  assert.notEqual(a, b, 'a session of its own');
  const c = field((await run(['/bin/bash', '-lc', PROBE], { ...snap('S'), cwd: uri(base) })).out, 'rand');
  assert.notEqual(c, a, 'another cwd');
  const d = field((await run(['/bin/bash', '-lc', PROBE], { ...snap('S'), envPolicy: { inherit: 'core', ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [] } })).out, 'rand');
  assert.notEqual(d, a, 'another envPolicy');
  assert.equal(field((await run(['/bin/bash', '-lc', PROBE], snap('S'))).out, 'rand'), a);
});

test('a sandboxed start with the same scope is captured inside its sandbox, apart from the unsandboxed one', async (t) => {
  const support = await sandboxSupport();
  if (!support.ok) return t.skip(`no sandbox here: ${support.reason}`);
  const { run, work, home } = await fixture(t);
  // The profile writes where only an unsandboxed capture can: a sandboxed capture runs inside.
  writeFileSync(path.join(home, '.bash_profile'), `${PROFILE}touch ${home}/captured-outside 2>/dev/null && export OUTSIDE=yes\n`);
  const sandbox = managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: uri(work) });
  const plain = await run(['/bin/bash', '-lc', PROBE + '; echo "outside=$OUTSIDE"'], snap('X'));
  const boxed = await run(['/bin/bash', '-lc', PROBE + '; echo "outside=$OUTSIDE"'], { ...snap('X'), sandbox });
  const boxedAgain = await run(['/bin/bash', '-lc', PROBE + '; echo "outside=$OUTSIDE"'], { ...snap('X'), sandbox });
  assert.equal(field(plain.out, 'outside'), 'yes');
  assert.equal(field(boxed.out, 'outside'), '', 'the sandboxed capture could not write outside its sandbox');
  assert.equal(boxed.err, '');
  assert.equal(field(boxed.out, 'pwd'), work);
  assert.notEqual(field(boxed.out, 'rand'), field(plain.out, 'rand'), 'not the unsandboxed state');
  assert.equal(field(boxedAgain.out, 'rand'), field(boxed.out, 'rand'), 'the sandboxed scope is reused');
});

test('a state larger than one environment string (multi-byte and astral characters, ~300 KiB) is restored whole', async (t) => {
  // ~300 KiB of UTF-8 in one function: more than Linux's 128 KiB per environment string.
  const body = 'é'.repeat(50_000) + '😀'.repeat(20_000) + 'ü'.repeat(40_000);
  const { run } = await fixture(t, `${PROFILE}bigfn() { printf '%s' '${body}' | wc -c; }\n`);
  const first = await run(['/bin/bash', '-lc', 'bigfn'], snap('L'));
  const again = await run(['/bin/bash', '-lc', 'bigfn'], snap('L'));
  const bytes = String(Buffer.byteLength(body));
  assert.equal(first.err, '');
  assert.equal(first.out.trim(), bytes);
  assert.deepEqual(again, first);
});

test('zsh: the login files run once per scope (with ~/.zshrc), silently; ~/.zshenv does not run again; the state comes back in a -fc shell', async (t) => {
  const zsh = zshPath();
  if (!zsh) return t.skip('no zsh here (the unit tool stage installs it)');
  const { work, home, run, logs } = await fixture(t);
  writeZshFiles(home);
  const z = (id: string) => snap(id, 'zsh', zsh);
  const plain = await run([zsh, '-lc', ZSH_PROBE]);
  assert.equal(plain.err, 'zshenv-ran\nzprofile-ran\nzlogin-ran\n');
  assert.equal(field(plain.out, 'pwd'), '/tmp');

  const first = await run([zsh, '-lc', ZSH_PROBE], z('A'));
  assert.equal(first.err, '', 'no login file prints, ~/.zshenv included');
  assert.equal(first.exitCode, 0);
  assert.equal(field(first.out, 'pwd'), work);
  const values = field(first.out, 'rand');
  assert.match(values ?? '', /^\d+ env=\d+ rc=\d+ login=\d+$/, first.out);
  assert.match(first.out, /^multi=a\nb$/m, 'a value with a newline');
  assert.equal(field(first.out, 'local'), '', 'a parameter not exported does not come back');
  assert.match(first.out, /^fn:x\nenvfn\nrcfn\n/m, 'functions of ~/.zprofile, ~/.zshenv and ~/.zshrc');
  assert.match(first.out, /^zsh:3: command not found: zal$/m, 'aliases are not expanded in S (zsh parses -c whole), S is on line 3');
  assert.match(first.out, /^zal='echo aliased'$/m, 'the aliases are defined');
  assert.match(first.out, /^zrcal='echo rcaliased'$/m);
  assert.match(first.out, /^opts:\nnoclobber\nextendedglob\nnohashdirs\nlogin\nnonomatch\nlogin\nnoninter$/m, 'the options, login among them');
  assert.match(first.out, /^~dd$/m, 'named directories do not come back');
  assert.match(first.out, /^shlvl=1 flags=3569CXl$/m);

  const again = await run([zsh, '-lc', ZSH_PROBE], z('A'));
  assert.deepEqual(again, first, 'the same scope: the same state, nothing re-run');
  const other = await run([zsh, '-lc', ZSH_PROBE], z('B'));
  assert.equal(other.err, '');
  assert.notEqual(field(other.out, 'rand'), values, 'another scope captures afresh');

  const nonLogin = await run([zsh, '-c', ZSH_PROBE], z('A'));
  assert.equal(nonLogin.err.split('\n')[0], 'zshenv-ran', '-c: unchanged, ~/.zshenv runs');
  const extra = await run([zsh, '-lc', 'echo "$0 $1 rand=$ZRAND"', 'zero', 'one'], z('A'));
  assert.equal(extra.out, `zero one rand=${values?.split(' ')[0]}\n`);
  const mine = await run([zsh, '-lc', 'echo "rand=$ZRAND"'], { ...z('A'), env: { PATH: '/usr/bin:/bin', HOME: home, ZRAND: 'mine' } });
  assert.equal(mine.out, 'rand=mine\n', "the request's env wins");
  const carriers = await run([zsh, '-lc', 'env; typeset +m "__EXEC_SERVER*"; echo end'], z('A'));
  assert.doesNotMatch(carriers.out, /__EXEC_SERVER_SHELL_SNAPSHOT_/, 'the state variables are gone before S');
  assert.match(carriers.out, /^end$/m);
  assert.equal(logs.filter((l) => l.includes('captured')).length, 2, logs.join('\n'));
});

test('zsh: a state larger than one environment string (~300 KiB, multi-byte and astral) is restored whole', async (t) => {
  const zsh = zshPath();
  if (!zsh) return t.skip('no zsh here (the unit tool stage installs it)');
  const body = 'é'.repeat(50_000) + '😀'.repeat(20_000) + 'ü'.repeat(40_000);
  const { run, home } = await fixture(t);
  writeZshFiles(home, { '.zprofile': `bigfn() { printf '%s' '${body}' | wc -c; }\ncd /tmp\n` });
  const first = await run([zsh, '-lc', 'bigfn; echo "pwd=$PWD"'], snap('L', 'zsh', zsh));
  const again = await run([zsh, '-lc', 'bigfn; echo "pwd=$PWD"'], snap('L', 'zsh', zsh));
  assert.equal(first.err, '');
  assert.equal(first.out.split('\n')[0].trim(), String(Buffer.byteLength(body)));
  assert.notEqual(field(first.out, 'pwd'), '/tmp');
  assert.deepEqual(again, first);
});
