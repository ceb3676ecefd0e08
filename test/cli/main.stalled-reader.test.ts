// Backpressure end to end against the built CLI: a client that stops reading its websocket
// while a child writes far more than memory should hold. The server must stop reading the
// child (the child blocks on a full pipe/PTY, it is not finished) and its RSS must stay flat
// under 300 MB; once the client reads again every byte arrives, in seq order, and retention
// for process/read holds no more than its 1 MiB cap.
import { test, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import * as os from 'node:os';
import { pathToFileURL } from 'node:url';
import { startCli, stopAll, type Cli } from '../support/cli-servers';
import { ensureFreshBuild } from '../support/fresh-build';
import { StallClient, rssBytes } from '../support/stall-client';
import { bytesWritten, descendants, isAlive } from '../support/process';
import { sleep, waitFor } from '../support/wait';

const GiB = 1024 * 1024 * 1024;
const RSS_LIMIT = 300 * 1024 * 1024;
/** How long the client stays stalled while RSS is sampled. */
const STALL_MS = 15_000;

before(() => ensureFreshBuild());
after(() => stopAll());

interface Scenario {
  tty: boolean;
  bytes: number;
  /** After the stall: read everything back (true) or terminate the child and check cleanup. */
  drainTimeoutMs: number;
}

async function stalledReader(t: TestContext, s: Scenario): Promise<void> {
  const cli: Cli = await startCli(['--listen', 'ws://127.0.0.1:0']);
  const serverPid = cli.child.pid!;
  const client = await StallClient.connect(cli.url);
  let maxRss = 0;
  const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssBytes(serverPid) ?? 0)), 200);
  try {
    await client.init();
    const started = await client.call('process/start', {
      processId: 'flood',
      argv: ['/usr/bin/head', '-c', String(s.bytes), '/dev/zero'],
      cwd: pathToFileURL(os.tmpdir()).href,
      env: {},
      tty: s.tty,
      pipeStdin: false,
      arg0: null,
    });
    assert.ok(started.result, JSON.stringify(started));
    client.stall();
    const pid = await waitFor(() => descendants(serverPid).find((p) => p.comm === 'head')?.pid, { what: 'the head child', timeout: 10_000 });

    // Stalled: sample the child's write counter; once the server stops reading it must stop moving.
    const written: number[] = [];
    const stallEnd = Date.now() + STALL_MS;
    while (Date.now() < stallEnd) {
      written.push(bytesWritten(pid) ?? -1);
      await sleep(250); // sampling over the stall: the test is that the count stops moving for seconds
    }
    const rssWhileStalled = maxRss;
    const last = written[written.length - 1];
    const threeSecondsEarlier = written[written.length - 13];
    // The margins, in the log of every run (passing ones too): RSS and where the child stopped.
    t.diagnostic(`stalled: server RSS peak ${(rssWhileStalled / 2 ** 20).toFixed(0)} MiB (limit ${RSS_LIMIT / 2 ** 20}), child stopped after ${last} of ${s.bytes} bytes`);
    assert.ok(isAlive(pid), `the child finished while the client was stalled (wrote ${last} bytes): the server kept reading`);
    assert.ok(last > 0 && last < s.bytes, `child wrote ${last} of ${s.bytes} bytes`);
    assert.equal(last, threeSecondsEarlier, 'the child kept writing during the last 3 s of the stall: output is not paused');
    assert.ok(rssWhileStalled < RSS_LIMIT, `server RSS reached ${(rssWhileStalled / 2 ** 20).toFixed(0)} MiB while stalled`);
    const stats = client.stats('flood');
    assert.ok(stats.bytes < s.bytes, 'the client cannot have everything yet');

    // Read again: every byte arrives, seqs contiguous, then exit 0 and close.
    client.unstall();
    await waitFor(() => stats.closed, { what: 'the whole stream after the stall', timeout: s.drainTimeoutMs, detail: () => `${stats.bytes} of ${s.bytes} bytes` });
    assert.deepEqual(stats.seqErrors, []);
    assert.equal(stats.bytes, s.bytes);
    assert.equal(stats.exitCode, 0);
    t.diagnostic(`drained: server RSS peak ${(maxRss / 2 ** 20).toFixed(0)} MiB (limit ${RSS_LIMIT / 2 ** 20})`);
    assert.ok(maxRss < RSS_LIMIT, `server RSS reached ${(maxRss / 2 ** 20).toFixed(0)} MiB while draining`);
    assert.ok(!isAlive(pid), 'the child was not reaped');
    // Retention for process/read kept only its 1 MiB cap out of everything that went through.
    const read = await client.call('process/read', { processId: 'flood', afterSeq: 0, maxBytes: 64 * 1024 * 1024 });
    const retained = ((read.result as { chunks?: Array<{ chunk: string }> } | undefined)?.chunks ?? []).reduce(
      (n, c) => n + Buffer.byteLength(c.chunk, 'base64'),
      0,
    );
    assert.ok(retained > 0 && retained <= 1024 * 1024, `retained ${retained} bytes: ${JSON.stringify(read).slice(0, 200)}`);
    // The server is still healthy on the same connection.
    assert.deepEqual((await client.call('environment/status', null)).result, { status: 'ready' });
  } finally {
    clearInterval(sampler);
    client.ws.terminate();
    await cli.stop();
  }
}

test('stalled websocket reader, pipe child writing 1 GiB: child throttled, server RSS < 300 MB, every byte delivered after resume', async (t) => {
  await stalledReader(t, { tty: false, bytes: GiB, drainTimeoutMs: 60_000 });
});

test('stalled websocket reader, PTY child writing 256 MiB (smaller: PTYs are slow): child throttled, RSS < 300 MB, every byte delivered', async (t) => {
  await stalledReader(t, { tty: true, bytes: 256 * 1024 * 1024, drainTimeoutMs: 60_000 });
});
