// Attack: a sandboxed command floods the managed proxy's decision callback with thousands of
// distinct domains (each one a new network/policyRequest) while the client never answers. What
// must hold: at most MAX_PENDING_DECISIONS (256) questions wait for the client at once (the
// rest are denied at once, never queued), memory stays bounded, nothing hangs and every
// connection of the flood gets its 403. Then: a process that ends drops its waiting questions.
// On the code before the callback existed the flood test failed (no question was ever asked).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { MAX_PENDING_DECISIONS } from '../../../src/server/network/callback';
import { ExecServer } from '../../../src/server/exec-server';
import { removeTempDir, tempDir } from '../../support/tmp';
import { waitFor } from '../../support/wait';
import { RecordingSink, startParams, uri } from '../../support/server';

/** A client that can be asked and never answers: it sees each question until the server gives it up. */
class SilentClient extends RecordingSink {
  asked = 0;
  outstanding = 0;
  peak = 0;
  request(_method: string, _params: unknown, signal: AbortSignal): Promise<unknown> {
    this.asked++;
    this.outstanding++;
    this.peak = Math.max(this.peak, this.outstanding);
    return new Promise((_resolve, reject) => {
      signal.addEventListener(
        'abort',
        () => {
          this.outstanding--;
          reject(new Error('abandoned'));
        },
        { once: true },
      );
    });
  }
}

let server: ExecServer;
let sink: SilentClient;
let call: (m: string, p: unknown) => Promise<any>;
let dir: string;
let W: string;

before(async () => {
  server = new ExecServer();
  sink = new SilentClient();
  const conn = server.connect(sink, { label: 'flood' });
  await conn.requestUntyped('initialize', { clientName: 'flood' });
  conn.notification('initialized', {});
  call = (m, p) => conn.requestUntyped(m, p);
  dir = tempDir('es-np-flood-');
  W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
});
after(async () => {
  await server.shutdown();
  removeTempDir(dir);
});

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: false, domains: { localhost: 'allow' } };
const sandbox = () => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network: 'enabled' });

/** node inside the sandbox: `total` requests for distinct names, `parallel` at a time; prints the status codes it got. */
function flooder(tag: string, total: number, parallel: number): string[] {
  const js = `
const net = require('net');
const port = +process.env.HTTP_PROXY.split(':').pop();
let next = 0, done = 0; const codes = {};
function one() {
  if (next >= ${total}) return;
  const i = next++; let buf = '';
  const s = net.connect(port, '127.0.0.1', () => s.write('GET http://${tag}-' + i + '.flood.test/ HTTP/1.1\\r\\n\\r\\n'));
  s.on('data', (d) => (buf += d));
  s.on('error', () => {});
  s.on('close', () => {
    const m = /^HTTP\\/1\\.1 (\\d+)/.exec(buf); const k = m ? m[1] : 'none';
    codes[k] = (codes[k] || 0) + 1;
    if (++done === ${total}) console.log('RESULT ' + JSON.stringify(codes)); else one();
  });
}
for (let k = 0; k < ${parallel}; k++) one();`;
  return ['/usr/bin/env', 'ELECTRON_RUN_AS_NODE=1', process.execPath, '-e', js];
}

async function startProxied(id: string, argv: string[], timeoutMs: number): Promise<void> {
  const r = await call('process/start', startParams(id, argv, { cwd: uri(W), sandbox: sandbox(), enforceManagedNetwork: true, networkProxy: { proxy: PROXY, policyDecisionTimeoutMs: timeoutMs } }));
  assert.deepEqual(r, { processId: id, sandboxType: 'linuxSeccomp' });
}

test('attack: 2000 distinct domains from four sandboxed commands, the client silent: at most 256 questions wait at once, the rest are denied at once, every connection gets its 403, memory stays bounded', async () => {
  const total = 500;
  const ids = ['flood-a', 'flood-b', 'flood-c', 'flood-d'];
  const heap0 = process.memoryUsage().heapUsed;
  let heapPeak = heap0;
  const sampler = setInterval(() => (heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed)), 100);
  const t0 = Date.now();
  try {
    // 4 × 120 connections at once: more than the bound, fewer than the relay's 128 per process.
    for (const id of ids) await startProxied(id, flooder(id, total, 120), 1);
    await sink.waitFor(() => ids.every((id) => sink.closed(id)), 100_000, 'the flooders');
  } finally {
    clearInterval(sampler);
  }
  const elapsed = Date.now() - t0;
  for (const id of ids) assert.match(sink.outputText(id), new RegExp(`RESULT \\{"403":${total}\\}`), `${id}: ${sink.outputText(id).slice(0, 500)}`);
  assert.equal(sink.peak, MAX_PENDING_DECISIONS, 'questions waiting at once');
  assert.equal(sink.outstanding, 0, 'questions still held after the flood');
  const decided = sink.events.filter((e) => e.method === 'network/policyDecision' && ids.includes(e.params.processId));
  assert.equal(decided.length, ids.length * total);
  assert.ok(decided.every((e) => e.params.decision === 'deny' && e.params.source === 'decider' && e.params.reason === 'not_allowed'));
  // Asked: at most what fit under the bound each time; the others never reached the client.
  assert.ok(sink.asked < ids.length * total, `asked ${sink.asked}`);
  const heapMiB = (heapPeak - heap0) / 2 ** 20;
  assert.ok(heapMiB < 128, `heap grew ${heapMiB.toFixed(1)} MiB`);
  console.log(`flood: ${ids.length * total} connections in ${elapsed} ms, ${sink.asked} asked, peak ${sink.peak} waiting, heap +${heapMiB.toFixed(1)} MiB`);
});

test('a process that ends drops its waiting questions at once (the client is told nothing more, the slot is free)', async () => {
  const before = sink.outstanding;
  await startProxied('ends', flooder('ends', 20, 20), 600_000);
  await waitFor(() => sink.outstanding === before + 20, { what: '20 questions waiting', timeout: 30_000 });
  await call('process/terminate', { processId: 'ends' });
  await waitFor(() => sink.outstanding === before, { what: 'the questions dropped', timeout: 15_000 });
});
