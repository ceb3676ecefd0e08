// The sandbox support probe (src/server/sandbox/support.ts) runs asynchronously: constructing
// an ExecServer (the VS Code extension host's activation, the CLI's startup) never waits for
// it. Written against a bubblewrap that takes 2 s to answer (EXEC_SERVER_BWRAP → a script
// that sleeps, then runs the real bwrap or fails): the constructor returns at once, and a
// managed process/start pipelined right behind initialize waits for the answer, then runs
// confined (working bwrap) or is refused (broken bwrap) — never runs unconfined meanwhile.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { ExecServer } from '../../../src/server/exec-server';
import { ENV, tmpDir, uri } from '../../support/server';
import { RecordingSink } from '../../support/server';

const dir = tmpDir();
const servers: ExecServer[] = [];
after(async () => {
  for (const s of servers) await s.shutdown();
  delete process.env.EXEC_SERVER_BWRAP;
});

/** A bwrap stand-in that answers only after 2 s: `then` is what it does afterwards. */
function slowBwrap(name: string, then: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\nsleep 2\n${then}\n`, { mode: 0o755 });
  return file;
}

const readOnly = () => ({
  permissions: { type: 'managed', file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'root' } }, access: 'read' }] }, network: 'restricted' },
  cwd: uri(dir),
  workspaceRoots: [uri(dir)],
});

/** A server on `bwrap`, its construction time, and a connection whose initialize is pipelined (not awaited). */
function startServer(bwrap: string) {
  process.env.EXEC_SERVER_BWRAP = bwrap;
  const logs: string[] = [];
  const t0 = performance.now();
  const server = new ExecServer({ log: (level, m) => logs.push(`${level} ${m}`) });
  const constructMs = performance.now() - t0;
  servers.push(server);
  const sink = new RecordingSink();
  const conn = server.connect(sink, { label: 'test' });
  const init = conn.requestUntyped('initialize', { clientName: 'test' }) as Promise<any>;
  assert.equal(conn.notification('initialized', {}), true);
  return { server, constructMs, sink, conn, init, logs };
}

test('sandbox probe: a slow bubblewrap does not block the constructor; a pipelined managed start waits and runs confined', async () => {
  const { constructMs, sink, conn, init, logs } = startServer(slowBwrap('slow-ok', 'exec /usr/bin/bwrap "$@"'));
  // The probe sleeps 2 s; a synchronous probe held the constructor for all of it.
  assert.ok(constructMs < 1000, `constructor took ${constructMs.toFixed(0)} ms`);
  assert.ok(!logs.some((l) => l.includes('managed sandboxes')), logs.join('\n')); // not settled yet
  const marker = path.join(dir, 'ok-marker');
  const start = conn.requestUntyped('process/start', {
    processId: 'p',
    argv: ['/bin/sh', '-c', `touch ${marker}; grep Seccomp: /proc/self/status`],
    cwd: uri(dir),
    env: ENV,
    tty: false,
    sandbox: readOnly(),
  });
  assert.deepEqual(await start, { processId: 'p', sandboxType: 'linuxSeccomp' });
  const info = await init;
  assert.equal(info.environmentInfo.capabilities.managedSandboxProcesses, true);
  assert.equal(info.environmentInfo.capabilities.managedSandboxSeccomp, true);
  assert.ok(logs.some((l) => l.startsWith('info managed sandboxes: enforced with') && l.endsWith('slow-ok')), logs.join('\n'));
  await sink.waitFor(() => sink.closed('p'), 20_000, 'p closed');
  assert.match(sink.outputText('p'), /Read-only file system[\s\S]*Seccomp:\s+2/);
  assert.equal(fs.existsSync(marker), false);
  const envInfo = (await conn.requestUntyped('environment/info', null)) as any;
  assert.equal(envInfo.capabilities.managedSandboxProcesses, true);
});

test('sandbox probe: a slow bubblewrap that then fails — the pipelined managed start is refused, nothing runs; unsandboxed still runs', async () => {
  const { constructMs, sink, conn, init, logs } = startServer(slowBwrap('slow-broken', 'echo "bwrap: no user namespaces" >&2; exit 1'));
  assert.ok(constructMs < 1000, `constructor took ${constructMs.toFixed(0)} ms`);
  const marker = path.join(dir, 'broken-marker');
  const env = conn.requestUntyped('environment/info', null) as Promise<any>;
  const start = conn.requestUntyped('process/start', {
    processId: 'q',
    argv: ['/bin/sh', '-c', `touch ${marker}`],
    cwd: uri(dir),
    env: ENV,
    tty: false,
    sandbox: readOnly(),
  });
  await assert.rejects(start, (e: any) => e.code === -32600 && /cannot be enforced: bubblewrap at .*slow-broken cannot create a sandbox here.*no user namespaces/s.test(e.message));
  assert.equal((await env).capabilities.managedSandboxProcesses, false);
  assert.equal((await init).environmentInfo.capabilities.managedSandboxProcesses, false);
  assert.ok(logs.some((l) => l.startsWith('warn managed sandboxes: unavailable')), logs.join('\n'));
  assert.equal(fs.existsSync(marker), false);
  assert.deepEqual(await conn.requestUntyped('process/start', { processId: 'r', argv: ['true'], cwd: uri(dir), env: ENV, tty: false, sandbox: null }), {
    processId: 'r',
    sandboxType: 'none',
  });
  await sink.waitFor(() => sink.closed('r'), 20_000, 'r closed');
});
