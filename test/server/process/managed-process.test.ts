// src/server/process/managed-process.ts: process/start with pipes, its errors, env, arg0, process/read and retention.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, test } from 'node:test';
import { ExecServer } from '../../../src/server/exec-server';
import { MAX_PENDING_STDIN_BYTES } from '../../../src/server/process/managed-process';
import { outputPackStats, PACK_AFTER_MS } from '../../../src/server/process/output-buffer';
import { b64, connectClient, rejectsWith, startParams, tmpDir, unb64, uri } from '../../support/server';
import { isAlive } from '../../support/process';
import { waitFor } from '../../support/wait';

const servers: ExecServer[] = [];
after(async () => {
  for (const s of servers) await s.shutdown();
});
async function client(opts = {}) {
  const s = new ExecServer(opts);
  servers.push(s);
  return connectClient(s);
}

test('process/start pipes: output, exited, closed with one increasing seq', async () => {
  const c = await client();
  const r = await c.call('process/start', startParams('p1', ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3']));
  assert.deepEqual(r, { processId: 'p1', sandboxType: 'none' });
  await c.sink.waitFor(() => c.sink.closed('p1'));
  const evs = c.sink.forProcess('p1');
  assert.deepEqual(
    evs.map((e) => e.params.seq),
    evs.map((_, i) => i + 1),
  );
  const exited = evs.find((e) => e.method === 'process/exited')!;
  assert.equal(exited.params.exitCode, 3);
  assert.equal(exited.params.sandboxDenied, false);
  assert.equal(evs[evs.length - 1].method, 'process/closed');
  const text = (stream: string) =>
    evs.filter((e) => e.method === 'process/output' && e.params.stream === stream).map((e) => unb64(e.params.chunk)).join('');
  assert.equal(text('stdout'), 'out\n');
  assert.equal(text('stderr'), 'err\n');
  const read = await c.call('process/read', { processId: 'p1' });
  assert.equal(read.exited, true);
  assert.equal(read.closed, true);
  assert.equal(read.exitCode, 3);
  assert.equal(read.chunks.length, 2);
});

test('process/start errors: empty argv, duplicate id, spawn failures, bad types, relative cwd', async () => {
  const c = await client();
  await rejectsWith(c.call('process/start', startParams('e', [])), -32602, 'argv must not be empty');
  await rejectsWith(c.call('process/start', { ...startParams('e', ['true']), processId: 5 }), -32602, 'invalid type: number, expected a string');
  await rejectsWith(c.call('process/start', { argv: ['true'] }), -32602, 'missing field `processId`');
  await rejectsWith(c.call('process/start', startParams('e', ['true'], { cwd: 'tmp' })), -32602, 'invalid URI: relative URL without a base');
  await rejectsWith(c.call('process/start', startParams('e', ['no-such-binary-xyz'])), -32603, 'No such file or directory (os error 2)');
  await rejectsWith(
    c.call('process/start', startParams('e', ['true'], { cwd: uri('/no/such/dir') })),
    -32603,
    'No such file or directory (os error 2)',
  );
  await rejectsWith(c.call('process/start', startParams('e', ['no-such-binary-xyz'], { tty: true })), -32603, /No such file/);
  // A failed start frees the id.
  await c.call('process/start', startParams('e', ['true']));
  await rejectsWith(c.call('process/start', startParams('e', ['true'])), -32600, 'process e already exists');
});

test('two concurrent starts with the same id: exactly one wins', async () => {
  const c = await client();
  const results = await Promise.allSettled([
    c.call('process/start', startParams('dup', ['sleep', '5'])),
    c.call('process/start', startParams('dup', ['sleep', '5'])),
  ]);
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  assert.equal(rejected.reason.code, -32600);
  assert.equal(rejected.reason.message, 'process dup already exists');
  assert.deepEqual(await c.call('process/terminate', { processId: 'dup' }), { running: true });
  await c.sink.waitFor(() => c.sink.closed('dup'));
});

test('exact env: the child sees only the env it was given (no envPolicy)', async () => {
  const c = await client();
  await c.call('process/start', startParams('env', ['/usr/bin/env'], { env: { ONLY_THIS: 'yes' } }));
  await c.sink.waitFor(() => c.sink.closed('env'));
  assert.equal(c.sink.outputText('env'), 'ONLY_THIS=yes\n');
});

test('envPolicy core/excludes/set/includeOnly then env overlay', async () => {
  const c = await client();
  process.env.ES_TEST_SECRET_TOKEN = 'hidden';
  try {
    await c.call(
      'process/start',
      startParams('pol', ['/usr/bin/env'], {
        env: { OVERLAY: '1' },
        envPolicy: { inherit: 'all', ignoreDefaultExcludes: false, exclude: ['LANG*'], set: { FROM_SET: 'x' }, includeOnly: [] },
      }),
    );
    await c.sink.waitFor(() => c.sink.closed('pol'));
    const lines = c.sink.outputText('pol').split('\n');
    assert.ok(lines.includes('OVERLAY=1'));
    assert.ok(lines.includes('FROM_SET=x'));
    assert.ok(lines.some((l) => l.startsWith('PATH=')), 'inherit all keeps PATH');
    assert.ok(!lines.some((l) => l.startsWith('ES_TEST_SECRET_TOKEN=')), 'default excludes drop *TOKEN*/*SECRET*');
    assert.ok(!lines.some((l) => l.startsWith('LANG=')), 'exclude glob applies');

    await c.call(
      'process/start',
      startParams('core', ['/usr/bin/env'], { env: {}, envPolicy: { inherit: 'core', includeOnly: ['P*', 'H*'] } }),
    );
    await c.sink.waitFor(() => c.sink.closed('core'));
    const names = c.sink
      .outputText('core')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('=')[0])
      .sort();
    assert.ok(names.every((n) => ['HOME', 'PATH'].includes(n)), `unexpected vars ${names}`);
    assert.ok(names.includes('PATH'));
  } finally {
    delete process.env.ES_TEST_SECRET_TOKEN;
  }
});

test('arg0 sets argv[0] for pipe processes', async () => {
  const c = await client();
  // The shell's own argv[0], as the kernel sees it.
  await c.call('process/start', startParams('a1', ['/bin/sh', '-c', 'cat /proc/$$/cmdline | tr "\\0" " "'], { arg0: 'named-sh' }));
  await c.sink.waitFor(() => c.sink.closed('a1'));
  assert.match(c.sink.outputText('a1'), /^named-sh -c /);
});

test('process/read: afterSeq, maxBytes budget (at least one chunk), nextSeq, waitMs long-poll', async () => {
  const c = await client();
  await c.call('process/start', startParams('r', ['/bin/sh', '-c', 'printf aaaa; sleep 0.2; printf bbbb; sleep 0.2; printf cccc'], {}));
  await c.sink.waitFor(() => c.sink.closed('r'));
  const all = await c.call('process/read', { processId: 'r' });
  assert.equal(all.chunks.length, 3);
  assert.deepEqual(all.chunks.map((x: any) => x.seq), [1, 2, 3]);
  assert.equal(all.chunks.map((x: any) => unb64(x.chunk)).join(''), 'aaaabbbbcccc');
  assert.equal(all.nextSeq, 6, 'everything returned: the next seq after exited(4) and closed(5)');
  assert.equal(all.evictedThroughSeq, 0);
  // Budget smaller than one chunk: still one chunk.
  const one = await c.call('process/read', { processId: 'r', afterSeq: 0, maxBytes: 1 });
  assert.deepEqual(one.chunks.map((x: any) => x.seq), [1]);
  assert.equal(one.nextSeq, 2);
  const two = await c.call('process/read', { processId: 'r', afterSeq: 1, maxBytes: 8 });
  assert.deepEqual(two.chunks.map((x: any) => x.seq), [2, 3]);
  // Paging through with nextSeq reaches everything exactly once.
  let after = 0;
  const seen: number[] = [];
  for (let i = 0; i < 10; i++) {
    const page = await c.call('process/read', { processId: 'r', afterSeq: after, maxBytes: 4 });
    if (page.chunks.length === 0) break;
    seen.push(...page.chunks.map((x: any) => x.seq));
    after = page.nextSeq - 1;
  }
  assert.deepEqual(seen, [1, 2, 3]);
  const none = await c.call('process/read', { processId: 'r', afterSeq: 100 });
  assert.deepEqual(none.chunks, []);
  assert.equal(none.nextSeq, 6, 'nextSeq after exited(4) and closed(5)');

  // Long-poll: returns when output arrives, well before waitMs.
  await c.call('process/start', startParams('lp', ['/bin/sh', '-c', 'sleep 0.3; echo late'], {}));
  const t0 = Date.now();
  const res = await c.call('process/read', { processId: 'lp', afterSeq: 0, waitMs: 20_000 });
  assert.ok(Date.now() - t0 < 15_000);
  assert.ok(res.chunks.length >= 1 || res.exited, 'woke with news');
  await c.sink.waitFor(() => c.sink.closed('lp'));
  await rejectsWith(c.call('process/read', { processId: 'nope' }), -32600, 'unknown process id nope');
  await rejectsWith(c.call('process/read', { processId: 'r', afterSeq: -1 }), -32602, 'invalid number');
});

test('retention cap: >1 MiB of output keeps the newest bytes, reports eviction, no crash', async () => {
  const c = await client({ maxRetainedBytesPerProcess: 64 * 1024 });
  // ~600 KiB in a single process: far beyond the 64 KiB cap used here.
  await c.call('process/start', startParams('big', ['/bin/sh', '-c', 'head -c 600000 /dev/zero | tr "\\0" x; printf END']));
  await c.sink.waitFor(() => c.sink.closed('big'), 30_000);
  const live = c.sink.outputText('big');
  assert.equal(live.length, 600003, 'notifications stream everything');
  const r = await c.call('process/read', { processId: 'big', afterSeq: 0 });
  const retained = Buffer.concat(r.chunks.map((x: any) => Buffer.from(x.chunk, 'base64'))).toString();
  assert.ok(retained.length <= 64 * 1024 + 65536, `retained ${retained.length}`);
  assert.ok(retained.endsWith('END'), 'newest bytes retained');
  assert.ok(r.evictedThroughSeq >= 1);
  assert.ok(r.chunks[0].seq > 1, 'a client can tell output was evicted (first seq > afterSeq+1)');
  assert.equal(r.chunks[0].seq, r.evictedThroughSeq + 1);
});

test('default 1 MiB retention cap with 2 MiB of output', async () => {
  const c = await client();
  await c.call('process/start', startParams('big2', ['/bin/sh', '-c', 'head -c 2097152 /dev/zero; printf TAIL']));
  await c.sink.waitFor(() => c.sink.closed('big2'), 30_000);
  const r = await c.call('process/read', { processId: 'big2' });
  const bytes = r.chunks.reduce((n: number, x: any) => n + Buffer.from(x.chunk, 'base64').length, 0);
  assert.ok(bytes <= 1024 * 1024, `retained ${bytes} bytes`);
  assert.ok(bytes > 512 * 1024, `retained ${bytes} bytes`);
  assert.ok(unb64(r.chunks[r.chunks.length - 1].chunk).endsWith('TAIL'));
  assert.ok(r.evictedThroughSeq > 0);
});

test('process/write: statuses and writeId de-duplication', async () => {
  const c = await client();
  assert.deepEqual(await c.call('process/write', { processId: 'none', chunk: b64('x'), writeId: '1' }), { status: 'unknownProcess' });
  await c.call('process/start', startParams('cat', ['cat'], { pipeStdin: true }));
  assert.deepEqual(await c.call('process/write', { processId: 'cat', chunk: b64('one\n'), writeId: '1' }), { status: 'accepted' });
  // Same id again: accepted, not written twice.
  assert.deepEqual(await c.call('process/write', { processId: 'cat', chunk: b64('one\n'), writeId: '1' }), { status: 'accepted' });
  assert.deepEqual(await c.call('process/write', { processId: 'cat', chunk: b64('two\n'), writeId: '2' }), { status: 'accepted' });
  await c.sink.waitFor(() => c.sink.outputText('cat') === 'one\ntwo\n');
  assert.deepEqual(await c.call('process/closeStdin', { processId: 'cat' }), {});
  await c.sink.waitFor(() => c.sink.closed('cat'));
  assert.equal(c.sink.outputText('cat'), 'one\ntwo\n');
  assert.deepEqual(await c.call('process/write', { processId: 'cat', chunk: b64('x'), writeId: '3' }), { status: 'stdinClosed' });
  // Without pipeStdin stdin is not writable.
  await c.call('process/start', startParams('nostdin', ['sleep', '5']));
  assert.deepEqual(await c.call('process/write', { processId: 'nostdin', chunk: b64('x'), writeId: '1' }), { status: 'stdinClosed' });
  await c.call('process/terminate', { processId: 'nostdin' });
  await rejectsWith(c.call('process/write', { processId: 'cat', chunk: b64('x'), writeId: '' }), -32602, 'writeId must not be empty');
  await rejectsWith(c.call('process/write', { processId: 'cat', chunk: '!!', writeId: '9' }), -32602, 'Invalid symbol 33, offset 0.');
  await rejectsWith(c.call('process/write', { processId: 'cat', chunk: 'aGk=' }), -32602, 'missing field `writeId`');
  // Ids the server keeps in memory are bounded.
  await rejectsWith(c.call('process/write', { processId: 'cat', chunk: 'aGk=', writeId: 'w'.repeat(1025) }), -32602, 'writeId must not exceed 1024 bytes');
  await rejectsWith(c.call('process/start', startParams('p'.repeat(1025), ['true'])), -32602, 'processId must not exceed 1024 bytes');
});

test('pipelined requests on one process run in order (start + write + read in the same tick)', async () => {
  const c = await client();
  // Issued together without awaiting, as a pipelining client would: the write waits for the
  // start (the reference handles a connection's requests in order), so it is accepted.
  const start = c.call('process/start', startParams('st', ['cat'], { pipeStdin: true }));
  const write = c.call('process/write', { processId: 'st', chunk: b64('x'), writeId: '1' });
  const read = c.call('process/read', { processId: 'st', afterSeq: 0, waitMs: 10_000 });
  assert.deepEqual(await start, { processId: 'st', sandboxType: 'none' });
  assert.deepEqual(await write, { status: 'accepted' });
  const r = await read;
  assert.equal(unb64(r.chunks[0].chunk), 'x');
  // A failed start followed by a pipelined start of the same id: the second sees the id free.
  const bad = c.call('process/start', startParams('again', ['no-such-binary-xyz']));
  const good = c.call('process/start', startParams('again', ['true']));
  await rejectsWith(bad, -32603, 'No such file or directory (os error 2)');
  assert.deepEqual(await good, { processId: 'again', sandboxType: 'none' });
  await c.call('process/closeStdin', { processId: 'st' });
  await c.sink.waitFor(() => c.sink.closed('st') && c.sink.closed('again'));
});

test('a long-poll read does not hold up a write to the same process', async () => {
  const c = await client();
  await c.call('process/start', startParams('echo', ['cat'], { pipeStdin: true }));
  const poll = c.call('process/read', { processId: 'echo', afterSeq: 0, waitMs: 20_000 });
  const t0 = Date.now();
  assert.deepEqual(await c.call('process/write', { processId: 'echo', chunk: b64('ping\n'), writeId: 'a' }), { status: 'accepted' });
  const r = await poll; // woken by the echoed output
  assert.ok(Date.now() - t0 < 15_000);
  assert.equal(unb64(r.chunks[0].chunk), 'ping\n');
  await c.call('process/terminate', { processId: 'echo' });
  await c.sink.waitFor(() => c.sink.closed('echo'));
});

test('writeId memory is bounded: the oldest ids are forgotten after 4096 more', async () => {
  const c = await client();
  await c.call('process/start', startParams('wc', ['/bin/sh', '-c', 'wc -c'], { pipeStdin: true }));
  for (let i = 0; i <= 4096; i++) {
    const r = await c.call('process/write', { processId: 'wc', chunk: b64('a'), writeId: `id-${i}` });
    assert.equal(r.status, 'accepted');
  }
  // id-0 has been forgotten: written again. id-4096 is remembered: not written.
  await c.call('process/write', { processId: 'wc', chunk: b64('a'), writeId: 'id-0' });
  await c.call('process/write', { processId: 'wc', chunk: b64('a'), writeId: 'id-4096' });
  await c.call('process/closeStdin', { processId: 'wc' });
  await c.sink.waitFor(() => c.sink.closed('wc'));
  assert.equal(c.sink.outputText('wc').trim(), '4098');
});

test('process/signal interrupt reaches a shell trap; terminate kills with 128+9', async () => {
  const c = await client();
  await c.call(
    'process/start',
    startParams('trap', ['/bin/sh', '-c', 'trap "echo got-int; exit 7" INT; echo ready; while :; do sleep 0.05; done']),
  );
  await c.sink.waitFor(() => c.sink.outputText('trap').includes('ready'));
  assert.deepEqual(await c.call('process/signal', { processId: 'trap', signal: 'interrupt' }), {});
  await c.sink.waitFor(() => c.sink.closed('trap'));
  assert.match(c.sink.outputText('trap'), /got-int/);
  assert.equal(c.sink.forProcess('trap').find((e) => e.method === 'process/exited')!.params.exitCode, 7);
  await rejectsWith(c.call('process/signal', { processId: 'trap', signal: 'kill' }), -32602, 'unknown variant `kill`, expected `interrupt`');
  assert.deepEqual(await c.call('process/signal', { processId: 'unknown', signal: 'interrupt' }), {});

  await c.call('process/start', startParams('k', ['sleep', '30']));
  assert.deepEqual(await c.call('process/terminate', { processId: 'k' }), { running: true });
  await c.sink.waitFor(() => c.sink.closed('k'));
  assert.equal(c.sink.forProcess('k').find((e) => e.method === 'process/exited')!.params.exitCode, 137);
  assert.deepEqual(await c.call('process/terminate', { processId: 'k' }), { running: false });
  assert.deepEqual(await c.call('process/terminate', { processId: 'never' }), { running: false });
});

test('terminate kills the whole process group (grandchildren too)', async () => {
  const c = await client();
  await c.call('process/start', startParams('grp', ['/bin/sh', '-c', 'sleep 30 & echo $!; wait']));
  await c.sink.waitFor(() => /\d+\n/.test(c.sink.outputText('grp')));
  const grandchild = Number(c.sink.outputText('grp').trim());
  await c.call('process/terminate', { processId: 'grp' });
  await c.sink.waitFor(() => c.sink.closed('grp'));
  await waitFor(() => !isAlive(grandchild), { what: 'grandchild to die', timeout: 10_000 });
});

test('exited processes are forgotten after the retention time (id reusable)', async () => {
  const c = await client({ exitedProcessRetentionMs: 200 });
  await c.call('process/start', startParams('gone', ['true']));
  await c.sink.waitFor(() => c.sink.closed('gone'));
  const r = await c.call('process/read', { processId: 'gone' });
  assert.equal(r.closed, true);
  await rejectsWith(c.call('process/start', startParams('gone', ['true'])), -32600, 'process gone already exists');
  const err: any = await waitFor(() => c.call('process/read', { processId: 'gone' }).then(() => undefined, (e) => e), {
    what: 'process/read of `gone` to fail once retention expired',
  });
  assert.equal(err?.code, -32600);
  assert.equal(err?.message, 'unknown process id gone');
  await c.call('process/start', startParams('gone', ['true']));
  await c.sink.waitFor(() => c.sink.forProcess('gone').filter((e) => e.method === 'process/closed').length === 2);
});

test('maxProcessesPerSession refuses extra live processes with a clear error', async () => {
  const c = await client({ maxProcessesPerSession: 2 });
  await c.call('process/start', startParams('m1', ['sleep', '30']));
  await c.call('process/start', startParams('m2', ['sleep', '30']));
  await rejectsWith(c.call('process/start', startParams('m3', ['sleep', '30'])), -32600, /too many processes.*limit 2/);
  await c.call('process/terminate', { processId: 'm1' });
  await c.sink.waitFor(() => c.sink.closed('m1'));
  await c.call('process/start', startParams('m3', ['true']));
  await c.call('process/terminate', { processId: 'm2' });
  await c.sink.waitFor(() => c.sink.closed('m2') && c.sink.closed('m3'));
});

test('sandbox: null/disabled/external run unconfined; a malformed managed sandbox is refused before anything runs', async () => {
  const c = await client();
  await c.call('process/start', startParams('s1', ['true'], { sandbox: null }));
  await c.call('process/start', startParams('s2', ['true'], { sandbox: { permissions: { type: 'disabled' } } }));
  await c.call('process/start', startParams('s3', ['true'], { sandbox: { permissions: { type: 'external', sandbox: 'x' } } }));
  // Managed sandboxes are enforced (test/server/sandbox/*.test.ts); this one lacks its policy.
  await rejectsWith(c.call('process/start', startParams('s4', ['true'], { sandbox: { permissions: { type: 'managed' } } })), -32602, 'missing field `file_system`');
  await rejectsWith(c.call('process/read', { processId: 's4' }), -32600, 'unknown process id s4');
  await rejectsWith(c.call('fs/readFile', { path: '/etc/hostname', sandbox: { permissions: { type: 'managed' } } }), -32602, 'missing field `file_system`');
  await c.sink.waitFor(() => ['s1', 's2', 's3'].every((id) => c.sink.closed(id)));
});

test('stdin that the child never reads is bounded: writes beyond the limit fail clearly, then succeed once read', async () => {
  const c = await client();
  // The child reads nothing until told (a file appears), then drains stdin.
  const dir = tmpDir();
  const flag = `${dir}/go`;
  await c.call('process/start', startParams('slow', ['/bin/sh', '-c', `while [ ! -e ${flag} ]; do sleep 0.05; done; wc -c`], { pipeStdin: true }));
  const block = Buffer.alloc(8 * 1024 * 1024, 97).toString('base64');
  let refused: any;
  let written = 0;
  for (let i = 0; i < 20 && !refused; i++) {
    try {
      await c.call('process/write', { processId: 'slow', chunk: block, writeId: `b${i}` });
      written++;
    } catch (e) {
      refused = e;
    }
  }
  assert.ok(refused, 'a write was refused');
  assert.equal(refused.code, -32603);
  assert.match(refused.message, /is not being read/);
  assert.ok(written * 8 * 1024 * 1024 <= MAX_PENDING_STDIN_BYTES + 8 * 1024 * 1024);
  fs.writeFileSync(flag, '');
  // The refused id was not remembered: retrying it works once the child drains stdin.
  const retried = await waitFor(
    () => c.call('process/write', { processId: 'slow', chunk: b64('z'), writeId: `b${written}` }).catch(() => undefined),
    { what: 'the retried write to be accepted', interval: 50 },
  );
  assert.deepEqual(retried, { status: 'accepted' });
  await c.call('process/closeStdin', { processId: 'slow' });
  await c.sink.waitFor(() => c.sink.closed('slow'), 30_000);
  assert.equal(Number(c.sink.outputText('slow').trim()), written * 8 * 1024 * 1024 + 1);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a closed process reads back the same once its retained output is kept deflated (1 s after it closed)', async () => {
  const c = await client();
  // ~900 KiB of numbered lines on stdout and stderr, in many reads.
  const script = 'for i in $(seq 1 12000); do echo "line $i of the build: something happened here"; [ $((i % 97)) = 0 ] && echo "warning $i" >&2; done; true';
  const packed0 = outputPackStats.packed;
  await c.call('process/start', startParams('big', ['/bin/bash', '-c', script]));
  await c.sink.waitFor(() => c.sink.closed('big'), 30_000, 'big closed');
  const first = await c.call('process/read', { processId: 'big' });
  const text = (r: any) => r.chunks.map((x: any) => `${x.seq}/${x.stream}/${unb64(x.chunk)}`).join('|');
  assert.ok(first.chunks.length > 4);
  assert.equal(first.chunks.map((x: any) => unb64(x.chunk)).join('').split('\n').filter((l: string) => l.startsWith('line')).length, 12000);
  await waitFor(() => outputPackStats.packed > packed0, { what: 'the closed process output deflated', timeout: PACK_AFTER_MS + 10_000 });
  const later = await c.call('process/read', { processId: 'big' });
  assert.deepEqual({ ...later, chunks: text(later) }, { ...first, chunks: text(first) });
  // A reader with nothing new gets the final state (not chunks) as before.
  const tailRead = await c.call('process/read', { processId: 'big', afterSeq: first.nextSeq - 1 });
  assert.deepEqual(tailRead.chunks, []);
  assert.equal(tailRead.closed, true);
});
