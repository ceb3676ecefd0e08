// process/start.shellSnapshot tests (test/server/process/shell-snapshot*.test.ts): a HOME whose
// ~/.bash_profile prints to stderr, exports a random value, defines a function and an alias and
// runs `cd /tmp` (REFERENCE-CAPABILITIES §4.1), an in-process server with its log, and `run`;
// the zsh login files (~/.zshenv, ~/.zprofile, ~/.zshrc, ~/.zlogin) and where zsh is.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { ExecServer } from '../../src/server/exec-server';
import { connectClient, uri, type Client } from './server';
import { tempDir } from './tmp';

export const PROFILE = [
  'echo profile-ran >&2',
  'export SNAP_RAND=$RANDOM$RANDOM$RANDOM',
  'snapfn() { echo "fn:$1"; }',
  "alias snapal='echo aliased'",
  'shopt -s expand_aliases',
  'cd /tmp',
  '',
].join('\n');
/** What a start prints: where it runs, the profile's variable, function and alias. */
export const PROBE = 'echo "pwd=$PWD"; echo "rand=$SNAP_RAND"; type snapfn >/dev/null 2>&1 && snapfn x || echo nofn; snapal 2>/dev/null || echo noalias';

/**
 * zsh's login files, each printing its name to stderr and exporting a random value; ~/.zprofile
 * also a value with a newline, a non-exported parameter, a function, plain, global and suffix
 * aliases, two options, a named directory and `cd /tmp`.
 */
export const ZSH_FILES: Record<string, string> = {
  '.zshenv': 'echo zshenv-ran >&2\necho zshenv-stdout\nexport ZENVRAND=$RANDOM$RANDOM$RANDOM\nenvfn() { echo envfn; }\n',
  '.zprofile': [
    'echo zprofile-ran >&2',
    'echo zprofile-stdout',
    'export ZRAND=$RANDOM$RANDOM$RANDOM',
    'export MULTI="a',
    'b"',
    'ZLOCAL=notexported',
    'zfn() { echo "fn:$1"; }',
    "alias zal='echo aliased'",
    "alias -g GAL='| tr a-z A-Z'",
    'alias -s txt=cat',
    'setopt noclobber',
    'unsetopt nomatch',
    'hash -d dd=/usr',
    'cd /tmp',
    '',
  ].join('\n'),
  '.zshrc': "echo zshrc-ran >&2\nexport ZRCRAND=$RANDOM$RANDOM$RANDOM\nzrcfn() { echo rcfn; }\nalias zrcal='echo rcaliased'\nsetopt extendedglob\n",
  '.zlogin': 'echo zlogin-ran >&2\nexport ZLOGINRAND=$RANDOM$RANDOM$RANDOM\n',
};
/** What a zsh start prints: cwd, the values, functions, aliases (and their line numbers), options, login, $0, named directory. */
export const ZSH_PROBE =
  'echo "pwd=$PWD"; echo "rand=$ZRAND env=$ZENVRAND rc=$ZRCRAND login=$ZLOGINRAND"; echo "multi=$MULTI"; echo "local=$ZLOCAL"; zfn x 2>&1; envfn 2>&1; zrcfn 2>&1; zal 2>&1; zrcal 2>&1; echo hi GAL; echo "opts:"; setopt; [[ -o login ]] && echo login || echo nologin; [[ -o interactive ]] && echo inter || echo noninter; echo "0=$0 1=$1"; echo ~dd; echo "shlvl=$SHLVL flags=$-"; alias | sort';

/** zsh's path (/bin/zsh where it is, else `command -v zsh`), or undefined where there is none. */
export function zshPath(): string | undefined {
  const r = spawnSync('/bin/sh', ['-c', 'if [ -x /bin/zsh ]; then echo /bin/zsh; else command -v zsh; fi'], { encoding: 'utf8' });
  return r.stdout.trim() || undefined;
}

export function writeZshFiles(home: string, files: Record<string, string> = ZSH_FILES): void {
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(home, name), text);
}

export interface Ran {
  out: string;
  err: string;
  exitCode: number | undefined;
}

export const snap = (scopeId: string, name = 'bash', p = '/bin/bash') => ({ shellSnapshot: { scopeId, shell: { name, path: p } } });
/** The value of a `k=v` line of `out`. */
export const field = (out: string, k: string): string | undefined => out.match(new RegExp(`^${k}=(.*)$`, 'm'))?.[1];

export async function snapshotFixture(t: TestContext, profile = PROFILE) {
  const base = tempDir('es-snap-', { t });
  const home = path.join(base, 'home');
  const work = path.join(base, 'work');
  for (const d of [home, work]) mkdirSync(d);
  writeFileSync(path.join(home, '.bash_profile'), profile);
  const logs: string[] = [];
  const server = new ExecServer({ log: (level, m) => logs.push(`${level} ${m}`) });
  t.after(() => server.shutdown());
  const c = await connectClient(server);
  let n = 0;
  const run = async (argv: string[], extra: Record<string, unknown> = {}, client: Client = c): Promise<Ran> => {
    const processId = `p${++n}`;
    await client.call('process/start', { processId, argv, cwd: uri(work), env: { PATH: '/usr/bin:/bin', HOME: home }, tty: false, ...extra });
    await client.sink.waitFor(() => client.sink.closed(processId), 60_000, `${processId} closed`);
    const events = client.sink.forProcess(processId);
    const text = (stream: string) =>
      Buffer.concat(events.filter((e) => e.method === 'process/output' && e.params.stream === stream).map((e) => Buffer.from(e.params.chunk, 'base64'))).toString();
    const exited = events.find((e) => e.method === 'process/exited');
    return { out: text('stdout'), err: text('stderr'), exitCode: exited?.params.exitCode };
  };
  return { base, home, work, server, c, run, logs };
}

/** The session's snapshot directory, as its capture log lines name it (other test files make their own meanwhile). */
export function snapshotDirOf(logs: string[]): string {
  const dirs = new Set(logs.map((l) => l.match(/captured in (\S+)\/[0-9a-f]{64}\.sh /)?.[1]).filter((d): d is string => d !== undefined));
  assert.equal(dirs.size, 1, logs.join('\n'));
  return [...dirs][0];
}
