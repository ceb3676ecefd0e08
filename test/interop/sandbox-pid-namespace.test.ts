// --linux-sandbox-pid-namespace against every reference version and ours, through process/start
// of a managed (workspace-write) sandbox over a websocket: by default and with `isolate` the
// sandboxed command is in a pid namespace of its own (its /proc/self/ns/pid inode is not this
// test's, it cannot signal this test's process), with `inherit` in the host's (the same inode, it
// can signal a process of its uid) — and on both the /proc of another process stays closed to it
// (its environ: permission denied, the user namespace is still its own). The command is run by sh
// (bash would source ~/.bashrc: stdin is a socket). A reference binary that
// is not installed skips only its half.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readlinkSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test, type TestContext } from 'node:test';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { managedSandbox, specialEntry } from '../../src/protocol/codex-sandbox';
import { ourServer, referenceBinary, referenceServers, startWsServer, type ServerCommand } from '../support/reference';

const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');
const u = (p: string) => pathToFileURL(p).href;
const HOST_NS = readlinkSync('/proc/self/ns/pid');

interface Seen {
  /** The sandbox's pid namespace is this test's. */
  hostNamespace: boolean;
  /** kill -0 of this test's pid succeeded. */
  signalsHost: boolean;
  /** /proc/<this test's pid>/environ was readable. */
  readsHostProc: boolean;
}

/** One sandboxed command on `server` started with `args`; what it saw of the pid namespace. */
async function observe(server: ServerCommand, args: string[], t: TestContext): Promise<Seen> {
  const srv = await startWsServer(server, args, 30_000, t);
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
  await call('initialize', { clientName: 'interop' });
  ws.send(JSON.stringify({ method: 'initialized', params: {} }));
  const cwd = path.join(cacheDir, `pidns-${randomBytes(4).toString('hex')}`);
  mkdirSync(cwd, { recursive: true });
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  const me = process.pid;
  const script = [
    'echo "ns=$(readlink /proc/self/ns/pid)"',
    `kill -0 ${me} 2>/dev/null && echo signal=yes || echo signal=no`,
    `cat /proc/${me}/environ >/dev/null 2>&1 && echo proc=yes || echo proc=no`,
  ].join('; ');
  const sandbox = managedSandbox({ entries: [specialEntry('root', 'read'), specialEntry('project_roots', 'write')], cwd: u(cwd) });
  const st = await call('process/start', { processId: 'p', argv: ['/bin/sh', '-c', script], cwd: u(cwd), env: { PATH: '/usr/bin:/bin', HOME: os.homedir() }, tty: false, sandbox });
  assert.equal(st.result?.sandboxType, 'linuxSeccomp', `${server.name}: ${JSON.stringify(st)}`);
  let out = '';
  let after = 0;
  for (let k = 0; k < 60; k++) {
    const r = await call('process/read', { processId: 'p', afterSeq: after, waitMs: 1000 });
    for (const c of r.result.chunks) {
      if (c.stream !== 'stderr') out += Buffer.from(c.chunk, 'base64').toString();
      after = c.seq;
    }
    if (r.result.exited && r.result.closed) {
      assert.equal(r.result.exitCode, 0, `${server.name} ${args.join(' ')}: ${out}`);
      const field = (k: string) => new RegExp(`^${k}=(.*)$`, 'm').exec(out)?.[1];
      const ns = field('ns');
      assert.match(ns ?? '', /^pid:\[\d+\]$/, `${server.name} ${args.join(' ')}: ${out}`);
      return { hostNamespace: ns === HOST_NS, signalsHost: field('signal') === 'yes', readsHostProc: field('proc') === 'yes' };
    }
  }
  throw new Error(`${server.name}: the sandboxed command did not end`);
}

const MODES: { args: string[]; expect: Seen }[] = [
  { args: [], expect: { hostNamespace: false, signalsHost: false, readsHostProc: false } },
  { args: ['--linux-sandbox-pid-namespace', 'isolate'], expect: { hostNamespace: false, signalsHost: false, readsHostProc: false } },
  { args: ['--linux-sandbox-pid-namespace', 'inherit'], expect: { hostNamespace: true, signalsHost: true, readsHostProc: false } },
];

test('sandbox pid namespace: default and isolate its own, inherit the host\'s (same inode, can signal the host\'s processes), as every reference version', async (t) => {
  for (const m of MODES) assert.deepEqual(await observe(ourServer, m.args, t), m.expect, `ours ${m.args.join(' ') || '(default)'}`);
  for (const ref of referenceServers()) {
    try {
      referenceBinary(ref.version);
    } catch (e) {
      t.diagnostic(`${ref.name} absent, its half skipped: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    for (const m of MODES) assert.deepEqual(await observe(ref, m.args, t), m.expect, `${ref.name} ${m.args.join(' ') || '(default)'}`);
  }
});
