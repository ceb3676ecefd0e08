// src/server/session.ts: initialize, gating, detach + resume, TTL, terminateOnClose, shutdown and a congested sink.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { EXTENSION_METHODS } from '../../src/protocol/types';
import type { NotificationMap, NotificationMethod } from '../../src/protocol/types';
import type { NotificationSink } from '../../src/server/api';
import { ExecServer } from '../../src/server/exec-server';
import { connectClient, RecordingSink, rejectsWith, startParams } from '../support/server';
import { bytesWritten, cmdline, descendants, isAlive } from '../support/process';
import { sleep, waitFor } from '../support/wait';

const servers: ExecServer[] = [];
after(async () => {
  for (const s of servers) await s.shutdown();
});
function server(opts = {}) {
  const s = new ExecServer(opts);
  servers.push(s);
  return s;
}
const pidOf = async (c: { call(m: string, p?: unknown): Promise<any>; sink: RecordingSink }, id: string) => {
  await c.sink.waitFor(() => /^\d+\n/.test(c.sink.outputText(id)));
  return Number(c.sink.outputText(id).split('\n')[0]);
};

test('initialize result: uuid v4 session, environmentInfo, extensions, server name/version', async () => {
  const c = await connectClient(server());
  assert.match(c.sessionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const sink = new RecordingSink();
  const conn = server().connect(sink);
  const r: any = await conn.requestUntyped('initialize', { clientName: 'x', resumeSessionId: null });
  assert.deepEqual(r.extensions, [...EXTENSION_METHODS]);
  assert.equal(r.serverName, 'exec-server');
  assert.equal(typeof r.serverVersion, 'string');
  assert.equal(typeof r.environmentInfo.shell.path, 'string');
  assert.match(r.environmentInfo.cwd, /^file:\/\//);
  assert.notEqual(r.sessionId, c.sessionId);
});

test('gating: before initialize, before initialized, second initialize, unknown method, bad notification', async () => {
  const s = server();
  const conn = s.connect(new RecordingSink());
  await rejectsWith(conn.requestUntyped('process/read', { processId: 'x' }), -32600, 'client must call initialize before using exec methods');
  await rejectsWith(conn.requestUntyped('fs/readFile', { path: '/tmp' }), -32600, 'client must call initialize before using filesystem methods');
  await rejectsWith(conn.requestUntyped('environment/info', null), -32600, 'client must call initialize before using environment info methods');
  await rejectsWith(conn.requestUntyped('http/request', { method: 'GET', url: 'http://x/', headers: [], requestId: 'r' }), -32600, 'client must call initialize before using http methods');
  // Param errors are reported before gating, as the reference does.
  await rejectsWith(conn.requestUntyped('process/start', {}), -32602, 'missing field `processId`');
  await rejectsWith(conn.requestUntyped('nope/x', {}), -32601, 'exec-server stub does not implement `nope/x` yet');
  await rejectsWith(conn.requestUntyped('initialize', {}), -32602, 'missing field `clientName`');
  await rejectsWith(conn.requestUntyped('initialize', { clientName: 'x', resumeSessionId: 'abc' }), -32600, 'unknown session id abc');
  await conn.requestUntyped('initialize', { clientName: 'x' });
  await rejectsWith(conn.requestUntyped('process/read', { processId: 'x' }), -32600, 'client must send initialized before using exec methods');
  await rejectsWith(conn.requestUntyped('environment/status', null), -32600, 'client must send initialized before using environment status methods');
  await rejectsWith(conn.requestUntyped('initialize', { clientName: 'x' }), -32600, 'initialize may only be sent once per connection');
  assert.equal(conn.notification('bogus', {}), false);
  assert.equal(conn.notification('initialized', {}), true);
  assert.deepEqual(await conn.requestUntyped('environment/status', null), { status: 'ready' });
  assert.deepEqual(await conn.request('environment/status', null), { status: 'ready' });
  await rejectsWith(conn.requestUntyped('fs/readFile', null), -32602, /invalid type: null, expected struct/);
  await rejectsWith(conn.requestUntyped('fs/readFile', []), -32602, /invalid type: sequence, expected struct/);
  conn.close();
  await rejectsWith(conn.requestUntyped('environment/status', null), -32099);
  // Connections that never initialized are forgotten too.
  const idle = s.connect(new RecordingSink());
  assert.equal(s.connectionCount, 1);
  idle.close();
  assert.equal(s.connectionCount, 0);
});

test('detach + resume: processes keep running, no output lost (read with afterSeq), notifications to the new sink', async () => {
  const s = server();
  const a = await connectClient(s);
  await a.call('process/start', startParams('p', ['/bin/sh', '-c', 'echo $$; i=0; while [ $i -lt 40 ]; do echo line-$i; i=$((i+1)); sleep 0.02; done'], {}));
  await a.sink.waitFor(() => a.sink.outputText('p').includes('line-3'));
  const lastSeen = Math.max(...a.sink.forProcess('p').map((e) => e.params.seq));
  const seenText = a.sink.outputText('p');
  const pid = Number(seenText.split('\n')[0]);
  a.conn.close(); // detach
  // Output produced while detached: the shell writes more than was seen before detaching.
  await waitFor(() => (bytesWritten(pid) ?? Infinity) > Buffer.byteLength(seenText) + 20, { what: 'output while detached' });
  const b = await connectClient(s, a.sessionId);
  assert.equal(b.sessionId, a.sessionId);
  const caught = await b.call('process/read', { processId: 'p', afterSeq: lastSeen });
  assert.equal(caught.evictedThroughSeq, 0);
  await b.sink.waitFor(() => b.sink.closed('p'), 20_000);
  // Catch-up chunks + live notifications after them, de-duplicated by seq.
  const bySeq = new Map<number, string>();
  for (const ch of caught.chunks) bySeq.set(ch.seq, Buffer.from(ch.chunk, 'base64').toString());
  for (const e of b.sink.forProcess('p')) if (e.method === 'process/output') bySeq.set(e.params.seq, Buffer.from(e.params.chunk, 'base64').toString());
  const rest = [...bySeq.entries()].sort((x, y) => x[0] - y[0]).map(([, t]) => t).join('');
  const full = seenText + rest;
  for (let i = 0; i < 40; i++) assert.ok(full.includes(`line-${i}\n`), `line-${i} missing`);
  assert.equal(full.split('line-39').length, 2, 'no duplicates');
  // The old connection gets nothing after detach.
  assert.ok(a.sink.forProcess('p').every((e) => e.params.seq <= lastSeen + 50));
  assert.ok(!a.sink.closed('p'));
});

test('resume errors: attached session → -32010, unknown → -32600; TTL expiry kills processes', async () => {
  const s = server({ detachedSessionTtlMs: 300 });
  const a = await connectClient(s);
  await rejectsWith(
    connectClient(s, a.sessionId),
    -32010,
    `session ${a.sessionId} is already attached to another connection`,
  );
  await a.call('process/start', startParams('sl', ['/bin/sh', '-c', 'echo $$; exec sleep 60']));
  const pid = await pidOf(a, 'sl');
  a.conn.close();
  assert.ok(isAlive(pid), 'still running while detached');
  await waitFor(() => !isAlive(pid), { what: 'TTL expiry to kill the process', timeout: 10_000 });
  await rejectsWith(connectClient(s, a.sessionId), -32600, `unknown session id ${a.sessionId}`);
  assert.equal(s.sessionCount, 0);
});

test('terminateOnClose (stdio): closing ends the session and its processes', async () => {
  const s = server();
  const a = await connectClient(s, undefined, true);
  await a.call('process/start', startParams('sl', ['/bin/sh', '-c', 'echo $$; exec sleep 60']));
  const pid = await pidOf(a, 'sl');
  a.conn.close();
  await waitFor(() => !isAlive(pid), { what: 'process killed on close', timeout: 10_000 });
  await rejectsWith(connectClient(s, a.sessionId), -32600, `unknown session id ${a.sessionId}`);
});

test('shutdown() kills every process of every session (attached and detached)', async () => {
  const s = new ExecServer();
  const a = await connectClient(s);
  const b = await connectClient(s);
  await a.call('process/start', startParams('x', ['/bin/sh', '-c', 'echo $$; exec sleep 60']));
  await b.call('process/start', startParams('y', ['/bin/sh', '-c', 'echo $$; exec sleep 60'], { tty: true }));
  const pa = await pidOf(a, 'x');
  await b.sink.waitFor(() => /^\d+\r?\n/.test(b.sink.outputText('y')));
  const pb = Number(b.sink.outputText('y').split(/\r?\n/)[0]);
  b.conn.close();
  await s.shutdown();
  await waitFor(() => !isAlive(pa) && !isAlive(pb), { what: 'all children dead', timeout: 10_000 });
  assert.equal(s.sessionCount, 0);
  await rejectsWith(connectClient(s), -32099, 'connection closed');
});

test('backpressure: a congested sink pauses child output until drained', async () => {
  const s = server();
  let congested = false;
  const drains = new Set<() => void>();
  const events: { method: string; params: any }[] = [];
  const sink: NotificationSink = {
    notify<M extends NotificationMethod>(method: M, params: NotificationMap[M]) {
      events.push({ method, params });
    },
    isCongested: () => congested,
    onDrain(l) {
      drains.add(l);
      return { dispose: () => drains.delete(l) };
    },
  };
  const conn = s.connect(sink);
  await conn.requestUntyped('initialize', { clientName: 'bp' });
  conn.notification('initialized', {});
  congested = true;
  // `yes` writes as fast as it can; paused reading makes it block on a full pipe.
  await conn.requestUntyped('process/start', startParams('y', ['yes']));
  const bytes = () => events.filter((e) => e.method === 'process/output').reduce((n, e) => n + Buffer.from(e.params.chunk, 'base64').length, 0);
  await waitFor(() => bytes() > 0, { what: 'first output', timeout: 10_000 });
  // The server paused reading when it subscribed to the drain: from then on, only what was
  // already read may still arrive. The test is that output does NOT grow during a while.
  await waitFor(() => drains.size === 1, { what: 'the server to wait for the drain', timeout: 10_000 });
  const b1 = bytes();
  await sleep(500); // why: the window in which output must NOT grow
  const b2 = bytes();
  assert.ok(b2 - b1 <= 256 * 1024, `output kept flowing while congested: ${b2 - b1} bytes`);
  assert.equal(drains.size, 1, 'waiting for drain');
  congested = false;
  for (const l of [...drains]) l();
  await waitFor(() => bytes() > b2 + 1024 * 1024, { what: 'output to resume after drain', timeout: 15_000 });
  await conn.requestUntyped('process/terminate', { processId: 'y' });
  await waitFor(() => events.some((e) => e.method === 'process/closed'), { what: 'closed', timeout: 10_000 });
});

test('while detached, output keeps flowing into retention (bounded by the cap)', async () => {
  const s = server({ maxRetainedBytesPerProcess: 128 * 1024 });
  const a = await connectClient(s);
  await a.call('process/start', startParams('y', ['/bin/sh', '-c', 'head -c 3000000 /dev/zero; echo done-writing']));
  a.conn.close();
  // The child writes everything with nobody attached (its shell is gone once done-writing is out).
  await waitFor(() => !descendants(process.pid).some((p) => cmdline(p.pid).includes('done-writing')), { what: 'the detached child to finish' });
  const b = await connectClient(s, a.sessionId);
  // Long-poll until the process is closed (bounded).
  for (let i = 0; i < 300; i++) {
    const r = await b.call('process/read', { processId: 'y', afterSeq: 1e9, waitMs: 100 });
    if (r.closed) break;
  }
  const all = await b.call('process/read', { processId: 'y' });
  const text = Buffer.concat(all.chunks.map((x: any) => Buffer.from(x.chunk, 'base64'))).toString();
  assert.ok(text.endsWith('done-writing\n'));
  assert.ok(text.length <= 128 * 1024 + 65536);
  assert.ok(all.evictedThroughSeq > 0);
});

test('a pending long-poll ends when its connection closes', async () => {
  const s = server();
  const a = await connectClient(s);
  await a.call('process/start', startParams('quiet', ['sleep', '30']));
  const t0 = Date.now();
  const pending = a.call('process/read', { processId: 'quiet', afterSeq: 0, waitMs: 60_000 });
  setTimeout(() => a.conn.close(), 100);
  const r = await pending;
  assert.ok(Date.now() - t0 < 30_000, 'returned long before waitMs');
  assert.deepEqual(r.chunks, []);
  assert.equal(r.exited, false);
});
