// Limits over a real websocket against the built CLI: a deep pipeline completes, the
// in-flight cap answers -32001 instead of stalling, an oversized frame closes cleanly.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { ensureFreshBuild } from '../support/fresh-build';
import { attempt, openRpc, RawRpc, startCli, stopAll } from '../support/cli-servers';
import { tempDir } from '../support/security';
import { MAX_SESSIONS } from '../../src/transports/websocket-server';

const tmp = tempDir();
before(() => ensureFreshBuild()); // the CLI built from this tree, not a stale bundle
after(async () => {
  await stopAll();
  tmp.dispose();
});

/** Sends all frames back to back (one write burst), then collects every response by id. */
function pipeline(rpc: RawRpc, frames: Array<{ method: string; params: unknown }>) {
  return Promise.all(frames.map((f) => rpc.call(f.method, f.params)));
}

function pipelineFrames(file: string) {
  return Array.from({ length: 10_000 }, (_, i) =>
    i % 2 ? { method: 'environment/status', params: null } : { method: 'fs/getMetadata', params: { path: file } },
  );
}

function assertSuccess(r: Record<string, unknown>, i: number): void {
  if (i % 2) assert.deepEqual(r.result, { status: 'ready' }, JSON.stringify(r));
  else assert.equal((r.result as { size: number } | undefined)?.size, 5, JSON.stringify(r));
}

test('10 000 pipelined requests on one connection all complete with the default limits', async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0']);
  const rpc = await openRpc(cli.url);
  const file = pathToFileURL(tmp.file('meta.txt', 'hello')).href;
  const replies = await pipeline(rpc, pipelineFrames(file));
  assert.equal(replies.length, 10_000);
  const errors = replies.filter((r) => r.error);
  assert.equal(errors.length, 0, `first errors: ${JSON.stringify(errors.slice(0, 3))}`);
  replies.forEach(assertSuccess);
  assert.deepEqual((await rpc.call('environment/status', null)).result, { status: 'ready' });
  rpc.ws.close();
  await cli.stop();
});

test('beyond the default in-flight cap (16 384), requests get -32001 at once; the held requests then complete', async () => {
  const DEFAULT_CAP = 16_384;
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0']);
  const rpc = await openRpc(cli.url);
  // A process that prints only once the test creates `go`: until then every long poll on it waits.
  const go = `${tmp.dir}/go`;
  const started = await rpc.call('process/start', {
    processId: 'gated', argv: ['/bin/sh', '-c', 'while [ ! -e "$0" ]; do /bin/sleep 0.05; done; echo go', go],
    cwd: pathToFileURL(tmp.dir).href, env: {}, tty: false, pipeStdin: false, arg0: null,
  });
  assert.ok(started.result, JSON.stringify(started));
  // Fill every slot with a long poll, then pipeline a few more requests behind them.
  const polls = Array.from({ length: DEFAULT_CAP }, () => rpc.call('process/read', { processId: 'gated', afterSeq: 0, waitMs: 120_000 }));
  const extra = await Promise.all(Array.from({ length: 16 }, () => rpc.call('environment/status', null)));
  for (const r of extra) {
    const err = r.error as { code: number; message: string } | undefined;
    assert.equal(err?.code, -32001, JSON.stringify(r));
    assert.match(err!.message, /overloaded|in flight/i);
  }
  assert.equal(rpc.pendingCount, DEFAULT_CAP, 'the long polls are all still held');
  // Release them: every held request is answered normally, and the connection serves again.
  writeFileSync(go, '');
  const answers = await Promise.all(polls);
  const failed = answers.filter((a) => !a.result);
  assert.equal(failed.length, 0, `first failures: ${JSON.stringify(failed.slice(0, 3))}`);
  assert.deepEqual((await rpc.call('environment/status', null)).result, { status: 'ready' });
  rpc.ws.close();
  await cli.stop();
});

test('beyond --max-in-flight, requests get -32001 at once instead of stalling; the connection recovers', async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0', '--max-in-flight', '2']);
  const rpc = await openRpc(cli.url);
  const started = await rpc.call('process/start', {
    processId: 'sleeper', argv: ['/bin/sleep', '30'], cwd: pathToFileURL(tmp.dir).href, env: {}, tty: false, pipeStdin: false, arg0: null,
  });
  assert.equal((started.result as { processId?: string } | undefined)?.processId, 'sleeper', JSON.stringify(started));
  // Two long polls occupy both slots (they wait up to 5 s for output that never comes).
  const polls = [0, 1].map(() => rpc.call('process/read', { processId: 'sleeper', afterSeq: 0, waitMs: 5000 }));
  const rejected = await Promise.all(Array.from({ length: 8 }, () => rpc.call('environment/status', null)));
  for (const r of rejected) {
    const err = r.error as { code: number; message: string } | undefined;
    assert.equal(err?.code, -32001, JSON.stringify(r));
    assert.match(err!.message, /overloaded|in flight/i);
  }
  // The long polls still finish normally, and then the connection serves again.
  for (const p of await Promise.all(polls)) assert.ok(p.result, JSON.stringify(p));
  assert.deepEqual((await rpc.call('environment/status', null)).result, { status: 'ready' });
  await rpc.call('process/terminate', { processId: 'sleeper' });
  rpc.ws.close();
  await cli.stop();
});

test('a frame over the 64 MiB maximum closes the connection with 1009; the server keeps serving', async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0']);
  const rpc = await openRpc(cli.url);
  const big = JSON.stringify({ id: 99, method: 'fs/writeFile', params: { path: pathToFileURL(`${tmp.dir}/big`).href, dataBase64: 'A'.repeat(64 * 1024 * 1024 + 16) } });
  rpc.ws.send(big);
  const closed = await rpc.closed;
  assert.equal(closed.code, 1009, `close code ${closed.code} ${closed.reason}`);
  const fresh = await openRpc(cli.url);
  assert.deepEqual((await fresh.call('environment/status', null)).result, { status: 'ready' });
  fresh.ws.close();
  await cli.stop();
});

test('attack: connect, initialize, leave in a loop: past MAX_SESSIONS sessions (detached, kept for their TTL) a new websocket gets 503 with the reason, and the server stays up', async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0', '--session-ttl', '600']);
  for (let i = 0; i <= MAX_SESSIONS; i++) {
    const a = await attempt(cli.url);
    if (a.kind !== 'open') {
      // Before: no bound, so this loop ran to its end. After: refused at the bound (one early
      // when the server has not yet seen the last websocket close: it counts until then).
      assert.ok(i >= MAX_SESSIONS - 1, `refused after only ${i} sessions: ${JSON.stringify(a)}`);
      assert.equal(a.kind === 'http' && a.status, 503);
      assert.match(a.kind === 'http' ? a.body : '', /too many sessions: \d+ sessions and [01] websockets/);
      const rpc = await openRpc(cli.url).catch((e: Error) => e);
      assert.ok(rpc instanceof Error, 'still refused');
      assert.deepEqual(await fetch(`${cli.url.replace('ws:', 'http:')}/readyz`).then((r) => r.status), 200);
      await cli.stop();
      return;
    }
    const rpc = new RawRpc(a.ws);
    await rpc.init();
    a.ws.close();
    await rpc.closed;
  }
  assert.fail(`${MAX_SESSIONS + 1} sessions were made: no bound`);
});
