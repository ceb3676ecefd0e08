// Conformance of `shellSnapshotV2` (process/start.shellSnapshot, REFERENCE-CAPABILITIES §4.1)
// against every reference version and ours, over a websocket, with the same HOME (a
// ~/.bash_profile that prints to stderr and stdout, exports a random value, defines a function
// and an alias, sets noclobber and runs `cd /tmp`): the same output for a plain login shell, a
// first and a repeated use of a scope, another scope, another cwd, a sandboxed start, `-c`, a
// shell.path that is not argv[0], `sh` as the announced shell (bash, and dash with a ~/.profile),
// a non-shell argv and an unknown shell (-32602); the random value compared as "same as start N" (it differs run to run).
// zsh apart, with ~/.zshenv, ~/.zprofile, ~/.zshrc and ~/.zlogin that each print and export a
// random value: which files run on a first and a later start, what comes back (values, functions,
// aliases, options, login, named directories, SHLVL), the cwd, the line numbers of S, `-c`, the
// arguments, the request's env, a sandboxed start.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test, type TestContext } from 'node:test';
import { pathToFileURL } from 'node:url';
import { managedSandbox, specialEntry } from '../../src/protocol/codex-sandbox';
import { ourServer, referenceServers, startWsServer, type ServerCommand } from '../support/reference';
import { RawRpcClient } from '../support/raw-rpc';
import { writeZshFiles, ZSH_PROBE, zshPath } from '../support/shell-snapshot';

const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');
const u = (p: string) => pathToFileURL(p).href;

const PROFILE = `echo profile-ran >&2
echo profile-stdout
export SNAP_RAND=$RANDOM$RANDOM$RANDOM
snapfn() { echo "fn:$1"; }
alias snapal='echo aliased'
shopt -s expand_aliases
set -o noclobber
cd /tmp
`;
const SH_PROFILE = `echo profile-ran >&2
export SNAP_RAND=$$
export MULTI="a
b"
alias sa='echo aliased'
f() { echo fn; }
set -o noglob
cd /tmp
`;
const SH_PROBE = 'echo "pwd=$PWD"; echo "rand=$SNAP_RAND"; echo "multi=$MULTI"; f 2>&1; sa 2>&1; set -o | grep noglob';
const PROBE = 'echo "pwd=$PWD"; echo "rand=$SNAP_RAND"; type snapfn >/dev/null 2>&1 && snapfn x || echo nofn; snapal 2>/dev/null || echo noalias; echo "opts=$-"; shopt login_shell';

/** A HOME and a work directory under the cache (the reference makes no sandbox under /tmp), a server, and `run`. */
async function open(server: ServerCommand, t: TestContext, files: (home: string) => void) {
  const base = path.join(cacheDir, `snap-${randomBytes(4).toString('hex')}`);
  const home = path.join(base, 'home');
  const work = path.join(base, 'work');
  for (const d of [home, work]) mkdirSync(d, { recursive: true });
  t.after(() => rmSync(base, { recursive: true, force: true }));
  files(home);
  const srv = await startWsServer(server, [], 30_000, t);
  const c = await RawRpcClient.open(srv.url);
  t.after(() => c.close());
  let n = 0;
  const run = async (argv: string[], extra: Record<string, unknown> = {}) => {
    const processId = `s${++n}`;
    try {
      await c.call('process/start', { processId, argv, cwd: u(work), env: { PATH: '/usr/bin:/bin', HOME: home }, tty: false, ...extra });
    } catch (e) {
      return { error: { code: (e as { code: number }).code, message: (e as Error).message } };
    }
    let out = '';
    let err = '';
    let after = 0;
    for (let k = 0; k < 120; k++) {
      const r = await c.call('process/read', { processId, afterSeq: after, waitMs: 1000 });
      for (const ch of r.chunks) {
        const text = Buffer.from(ch.chunk, 'base64').toString();
        if (ch.stream === 'stderr') err += text;
        else out += text;
        after = ch.seq;
      }
      if (r.closed) return { exitCode: r.exitCode, out: out.split(base).join('<base>'), err };
    }
    throw new Error(`${server.name}: ${processId} did not end`);
  };
  return { c, run, base, home, work };
}

/** The random values as "the value of start i" (their first appearance). */
function numbered(ran: Awaited<ReturnType<Awaited<ReturnType<typeof open>>['run']>>[], key: RegExp, sorted: number[] = []) {
  const seen = new Map<string, number>();
  return ran.map((r, i) => {
    if (!('out' in r) || r.out === undefined) return r;
    let out = r.out.replace(key, (_m, k: string, v: string) => {
      if (!seen.has(v)) seen.set(v, i);
      return `${k}=<of start ${seen.get(v)}>`;
    });
    if (sorted.includes(i)) out = out.split('\n').sort().join('\n');
    return { ...r, out };
  });
}

async function scenario(server: ServerCommand, t: TestContext) {
  const { c, run, home, work, base } = await open(server, t, (home) => {
    writeFileSync(path.join(home, '.bash_profile'), PROFILE);
    // dash as a login shell reads ~/.profile (bash does not while ~/.bash_profile exists).
    writeFileSync(path.join(home, '.profile'), SH_PROFILE);
  });
  const snap = (scopeId: string, name = 'bash', p = '/bin/bash') => ({ shellSnapshot: { scopeId, shell: { name, path: p } } });
  const sandbox = managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: u(work) });
  const ran = [
    await run(['/bin/bash', '-lc', PROBE]),
    await run(['/bin/bash', '-lc', PROBE], snap('A')),
    await run(['/bin/bash', '-lc', PROBE], snap('A')),
    await run(['/bin/bash', '-lc', PROBE], snap('B')),
    await run(['/bin/bash', '-lc', PROBE], { ...snap('A'), cwd: u(base) }),
    await run(['/bin/bash', '-lc', PROBE], { ...snap('A'), sandbox }),
    await run(['/bin/bash', '-lc', PROBE], { ...snap('A'), sandbox }),
    await run(['/bin/bash', '-lc', PROBE], snap('A')),
    await run(['/bin/bash', '-c', PROBE], snap('A')),
    await run(['/bin/bash', '-lc', PROBE], snap('A', 'zsh', '/bin/zsh')),
    await run(['/bin/bash', '-lc', PROBE], snap('SH', 'sh', '/bin/bash')),
    await run(['/bin/bash', '-lc', 'echo "$0 $1 rand=$SNAP_RAND"', 'zero', 'one'], snap('A')),
    await run(['/bin/bash', '-lc', PROBE], { ...snap('A'), env: { PATH: '/usr/bin:/bin', HOME: home, SNAP_RAND: 'from-env' } }),
    await run(['/usr/bin/env'], snap('A')),
    await run(['/bin/bash', '-lc', PROBE], snap('F', 'fish', '/bin/bash')),
    await run(['/bin/sh', '-lc', SH_PROBE], snap('D', 'sh', '/bin/sh')),
    await run(['/bin/sh', '-lc', SH_PROBE], snap('D', 'sh', '/bin/sh')),
  ];
  // The random value as "the value of start i" (its first appearance), the environment sorted.
  const info = await c.call('environment/info', {});
  const advertised = info.capabilities.shellSnapshotV2 as boolean;
  return { advertised, ran: numbered(ran, /(rand)=(\d+)/g, [13]) };
}

async function zshScenario(server: ServerCommand, t: TestContext, zsh: string) {
  const { run, home, work } = await open(server, t, (home) => writeZshFiles(home));
  const snap = (scopeId: string, p = zsh) => ({ shellSnapshot: { scopeId, shell: { name: 'zsh', path: p } } });
  const sandbox = managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: u(work) });
  const ran = [
    await run([zsh, '-lc', ZSH_PROBE]),
    await run([zsh, '-lc', ZSH_PROBE], snap('A')),
    await run([zsh, '-lc', ZSH_PROBE], snap('A')),
    await run([zsh, '-lc', ZSH_PROBE], snap('B')),
    await run([zsh, '-c', ZSH_PROBE], snap('A')),
    await run([zsh, '-lc', 'echo "0=$0 1=$1 rand=$ZRAND"', 'zero', 'one'], snap('A')),
    await run([zsh, '-lc', ZSH_PROBE], { ...snap('A'), env: { PATH: '/usr/bin:/bin', HOME: home, ZRAND: 'from-env' } }),
    await run([zsh, '-lc', ZSH_PROBE], { ...snap('A'), sandbox }),
    await run([zsh, '-lc', ZSH_PROBE], { ...snap('A'), sandbox }),
    await run([zsh, '-lc', 'env | grep -v "^_=" | sed -E "s/^(Z[A-Z]*RAND)=.*/\\1=<random>/"'], snap('A')),
    await run([zsh, '-lc', 'echo "shlvl=$SHLVL"; umask; set -o | grep -E "^(errexit|noclobber|nomatch|extendedglob|login|rcs) "; nosuchcommand'], { ...snap('L'), env: { PATH: '/usr/bin:/bin', HOME: home, SHLVL: '5' } }),
    await run([zsh, '-lc', 'echo "shlvl=$SHLVL"; umask; set -o | grep -E "^(errexit|noclobber|nomatch|extendedglob|login|rcs) "; nosuchcommand'], { ...snap('L'), env: { PATH: '/usr/bin:/bin', HOME: home, SHLVL: '5' } }),
  ];
  return numbered(ran, /(rand|env|rc|login)=(\d+)/g, [9]);
}

test('shell snapshots: the same output, the same captured state across starts, and the same cwd as every reference version', async (t) => {
  const { advertised, ran: ours } = await scenario(ourServer, t);
  assert.equal(advertised, true);
  // What must hold on ours whatever the reference says.
  const out = (i: number) => (ours[i] as { out: string }).out;
  const err = (i: number) => (ours[i] as { err: string }).err;
  assert.equal(err(0), 'profile-ran\n');
  assert.match(out(0), /^pwd=\/tmp$/m);
  assert.equal(err(1), '');
  assert.match(out(1), /^pwd=<base>\/work$/m);
  assert.match(out(1), /^rand=<of start 1>$/m);
  assert.match(out(2), /^rand=<of start 1>$/m, 'the same scope: the same state');
  assert.match(out(3), /^rand=<of start 3>$/m, 'another scope: captured afresh');
  assert.match(out(5), /^rand=<of start 5>$/m, 'sandboxed: its own capture');
  assert.match(out(6), /^rand=<of start 5>$/m);
  assert.match(out(7), /^rand=<of start 1>$/m);
  assert.equal(err(15), '', 'sh (dash): a snapshot too');
  assert.match(out(15), /^multi=a\nb$/m, 'a value with a newline');
  assert.match(out(16), /^rand=<of start 15>$/m);
  assert.deepEqual(ours[14], { error: { code: -32602, message: 'shell snapshots are unsupported for shell `fish`' } });
  for (const ref of referenceServers()) {
    const { advertised: theirFlag, ran: theirs } = await scenario(ref, t);
    assert.equal(theirFlag, true, `${ref.name} advertises shellSnapshotV2`);
    for (let i = 0; i < ours.length; i++) assert.deepEqual(ours[i], theirs[i], `start ${i} vs ${ref.name}`);
  }
});

test('zsh shell snapshots: the same login files run, the same state restored, the same cwd as every reference version', async (t) => {
  const zsh = zshPath();
  if (!zsh) return t.skip('no zsh here (the unit tool stage installs it)');
  const ours = await zshScenario(ourServer, t, zsh);
  const r = (i: number) => ours[i] as { out: string; err: string };
  assert.equal(r(0).err, 'zshenv-ran\nzprofile-ran\nzlogin-ran\n', 'a plain login shell: its own files');
  assert.match(r(0).out, /^pwd=\/tmp$/m);
  assert.equal(r(1).err, '', 'the capture is silent and ~/.zshenv does not run again');
  assert.match(r(1).out, /^pwd=<base>\/work$/m);
  assert.match(r(1).out, /^rand=<of start 1> env=<of start 1> rc=<of start 1> login=<of start 1>$/m, '~/.zshrc is part of the capture');
  assert.match(r(1).out, /^fn:x\nenvfn\nrcfn\n/m);
  assert.match(r(1).out, /^zsh:3: command not found: zal$/m, 'aliases are defined, not expanded in S; S starts on line 3');
  assert.match(r(1).out, /^noclobber\nextendedglob\nnohashdirs\nlogin\nnonomatch\nlogin\nnoninter$/m);
  assert.match(r(2).out, /^rand=<of start 1> env=<of start 1>/m, 'the same scope: the same state');
  assert.match(r(3).out, /^rand=<of start 3>/m, 'another scope: captured afresh');
  assert.match(r(7).out, /^rand=<of start 7>/m, 'sandboxed: its own capture');
  assert.match(r(8).out, /^rand=<of start 7>/m);
  assert.match(r(10).out, /^shlvl=6$/m);
  assert.deepEqual(ours[11], ours[10]);
  for (const ref of referenceServers()) {
    const theirs = await zshScenario(ref, t, zsh);
    for (let i = 0; i < ours.length; i++) assert.deepEqual(ours[i], theirs[i], `zsh start ${i} vs ${ref.name}`);
  }
});
