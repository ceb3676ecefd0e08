// Conformance of `linuxRootWritePreservesDevices` and `linuxApprovedRootWritePreservesRestrictions`
// (REFERENCE-CAPABILITIES §6.1) against every reference version and ours, through process/start
// over a websocket: under an approved root write with `.git` read-only, the standard devices
// work and the real `.git` stays read-only; a read-only `.git` that is a symlink in the writable
// root, a `.codex` link no rule names, and a denied path reached through such a symlink, are refused with the reference's
// stderr text and exit code 1, nothing of the command run; fs/* writes under such a profile are
// refused with the reference's fs-helper text, reads answered. One difference is not compared: the
// reference runs a root write without carve-outs outside bubblewrap (the host's /dev, pid and
// net namespaces); ours keeps bubblewrap (docs/protocol.md).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { managedSandbox, pathEntry, protectedEntry, specialEntry } from '../../src/protocol/codex-sandbox';
import { ourServer, referenceServers, startWsServer, type ServerCommand } from '../support/reference';

const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');
const u = (p: string) => pathToFileURL(p).href;

interface Ran {
  /** stdout */
  out: string;
  stderr: string;
  exitCode: number | null;
}

/** One connection: initialize, then each start read to its end (process/read long-polls). */
async function session(server: ServerCommand, t: import('node:test').TestContext) {
  const srv = await startWsServer(server, [], 30_000, t);
  const ws = new WebSocket(srv.url);
  t.after(() => ws.terminate());
  await new Promise((r, j) => ws.once('open', r).once('error', j));
  let id = 0;
  const pending = new Map<number, (m: { result?: any; error?: any }) => void>();
  ws.on('message', (d) => {
    const m = JSON.parse(String(d));
    pending.get(m.id)?.(m);
  });
  const call = (method: string, params: unknown) =>
    new Promise<{ result?: any; error?: any }>((resolve) => {
      pending.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  const init = await call('initialize', { clientName: 'interop' });
  ws.send(JSON.stringify({ method: 'initialized', params: {} }));
  const run = async (processId: string, cwd: string, sandbox: unknown, script: string): Promise<Ran> => {
    const st = await call('process/start', { processId, argv: ['/bin/bash', '-c', script], cwd: u(cwd), env: { PATH: '/usr/bin:/bin', HOME: os.homedir() }, tty: false, sandbox });
    assert.equal(st.result?.sandboxType, 'linuxSeccomp', `${server.name}: ${JSON.stringify(st)}`);
    let out = '';
    let stderr = '';
    let after = 0;
    for (let k = 0; k < 60; k++) {
      const r = await call('process/read', { processId, afterSeq: after, waitMs: 1000 });
      for (const c of r.result.chunks) {
        const text = Buffer.from(c.chunk, 'base64').toString();
        // The two pipes interleave differently from run to run: kept apart.
        if (c.stream === 'stderr') stderr += text;
        else out += text;
        after = c.seq;
      }
      if (r.result.exited && r.result.closed) return { out, stderr, exitCode: r.result.exitCode };
    }
    throw new Error(`${server.name}: ${processId} did not end`);
  };
  return { caps: init.result.environmentInfo.capabilities as Record<string, boolean>, run, call };
}

async function scenario(server: ServerCommand, t: import('node:test').TestContext) {
  const base = path.join(cacheDir, `rootw-${randomBytes(4).toString('hex')}`);
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const plain = path.join(base, 'plain');
  mkdirSync(path.join(plain, '.git'), { recursive: true });
  writeFileSync(path.join(plain, '.git', 'config'), '[core]\n');
  const linked = path.join(base, 'linked');
  mkdirSync(path.join(linked, 'sub'), { recursive: true });
  mkdirSync(path.join(base, 'gitdir'));
  mkdirSync(path.join(base, 'secret'));
  symlinkSync(path.join(base, 'gitdir'), path.join(linked, '.git'));
  symlinkSync(path.join(base, 'secret'), path.join(linked, 'sub', 'l'));
  // No rule names it: the reference protects `.codex` (as `.git`, `.agents`, `.aws`) below every writable root by itself.
  const codexLinked = path.join(base, 'codexlinked');
  mkdirSync(codexLinked);
  symlinkSync(path.join(base, 'secret'), path.join(codexLinked, '.codex'));
  const s = await session(server, t);
  const devices = [
    'echo x > /dev/null && echo devnull-ok',
    'test "$(head -c4 /dev/zero | od -An -tx1 | tr -d " ")" = 00000000 && echo zero-ok',
    'test "$(head -c16 /dev/urandom | wc -c)" = 16 && echo urandom-ok',
    'test -c /dev/tty && test -c /dev/full && test -c /dev/random && echo chardevs-ok',
    'echo s > /dev/shm/es-$$ && rm /dev/shm/es-$$ && echo shm-ok',
    'echo "[core] fsmonitor = x" >> .git/config 2>/dev/null || echo git-readonly',
    'echo built > out.txt && echo write-ok',
  ].join('; ');
  const plant = 'rm -f .git; mkdir .git && echo planted';
  const rootWrite = (cwd: string) => managedSandbox({ entries: [specialEntry('root', 'write'), protectedEntry('.git')], cwd: u(cwd) });
  const ran = {
    devices: await s.run('d1', plain, rootWrite(plain), devices),
    linkedRoot: await s.run('l1', linked, rootWrite(linked), plant),
    linkedWorkspace: await s.run('l2', linked, managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write'), protectedEntry('.git')], cwd: u(linked) }), plant),
    codexLinked: await s.run('l4', codexLinked, managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: u(codexLinked) }), 'rm -f .codex; mkdir .codex && echo planted'),
    deniedThroughLink: await s.run('l3', linked, managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write'), pathEntry(u(path.join(linked, 'sub', 'l')), 'none')], cwd: u(linked) }), 'rm -f sub/l; mkdir sub/l && echo replaced'),
  };
  // fs/* under the same workspace-write profile: writes refused with the text of the reference's fs helper, reads still answered.
  const wsSandbox = managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: u(linked) });
  writeFileSync(path.join(linked, 'r.txt'), 'r');
  const fsAnswers = [
    await s.call('fs/writeFile', { path: u(path.join(linked, 'w.txt')), dataBase64: 'eA==', sandbox: wsSandbox }),
    await s.call('fs/readFile', { path: u(path.join(linked, 'r.txt')), sandbox: wsSandbox }),
  ].map((m) => JSON.parse(JSON.stringify(m.error ? { error: { code: m.error.code, message: m.error.message } } : { result: m.result }).split(base).join('<base>')));
  const files = { gitConfig: readFileSync(path.join(plain, '.git', 'config'), 'utf8'), gitLink: readlinkSync(path.join(linked, '.git')), subLink: readlinkSync(path.join(linked, 'sub', 'l')) };
  // Paths differ per run: compare the texts with the scenario's directory named <base>.
  const norm = (r: Ran) => ({ exitCode: r.exitCode, stderr: r.stderr.split(base).join('<base>'), out: r.out.split(base).join('<base>') });
  return { caps: s.caps, fsAnswers, ran: Object.fromEntries(Object.entries(ran).map(([k, v]) => [k, norm(v)])) as Record<keyof typeof ran, Ran>, files: { ...files, gitLink: files.gitLink.split(base).join('<base>'), subLink: files.subLink.split(base).join('<base>') } };
}

test('an approved root write: devices, a read-only .git, and read-only or denied paths that cross a writable symlink, as every reference version', async (t) => {
  const ours = await scenario(ourServer, t);
  // What must hold on ours whatever the reference says.
  assert.equal(ours.caps.linuxRootWritePreservesDevices, true);
  assert.equal(ours.caps.linuxApprovedRootWritePreservesRestrictions, true);
  for (const m of ['devnull-ok', 'zero-ok', 'urandom-ok', 'chardevs-ok', 'shm-ok', 'git-readonly', 'write-ok']) assert.match(ours.ran.devices.out, new RegExp(`^${m}$`, 'm'), `ours: ${m}\n${ours.ran.devices.out}`);
  assert.equal(ours.files.gitConfig, '[core]\n');
  const refused = 'error building bubblewrap command: Fatal error: cannot enforce sandbox read-only path <base>/linked/.git because it crosses writable symlink <base>/linked/.git\n';
  assert.deepEqual(ours.ran.linkedRoot, { exitCode: 1, stderr: refused, out: '' });
  assert.deepEqual(ours.ran.linkedWorkspace, { exitCode: 1, stderr: refused, out: '' });
  // The protected `.git` link is named before the client's denied path (the reference's order).
  assert.deepEqual(ours.ran.deniedThroughLink, { exitCode: 1, stderr: refused, out: '' });
  const codexRefused = 'error building bubblewrap command: Fatal error: cannot enforce sandbox read-only path <base>/codexlinked/.codex because it crosses writable symlink <base>/codexlinked/.codex\n';
  assert.deepEqual(ours.ran.codexLinked, { exitCode: 1, stderr: codexRefused, out: '' });
  assert.deepEqual([ours.files.gitLink, ours.files.subLink], ['<base>/gitdir', '<base>/secret'], 'a link was replaced');
  assert.deepEqual(ours.fsAnswers, [
    { error: { code: -32603, message: `fs sandbox helper failed with status exit status: 1: ${refused.trimEnd()}` } },
    { result: { dataBase64: 'cg==' } },
  ]);
  for (const ref of referenceServers()) {
    const theirs = await scenario(ref, t);
    assert.equal(theirs.caps.linuxRootWritePreservesDevices && theirs.caps.linuxApprovedRootWritePreservesRestrictions, true, `${ref.name} advertises both`);
    assert.deepEqual(ours.ran, theirs.ran, `vs ${ref.name}`);
    assert.deepEqual(ours.files, theirs.files, `files vs ${ref.name}`);
    assert.deepEqual(ours.fsAnswers, theirs.fsAnswers, `fs/* vs ${ref.name}`);
  }
});
