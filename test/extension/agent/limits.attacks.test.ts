// Attacks on the extension host's memory through the agent endpoint, each written as an agent
// holding the token would do it (real loopback websockets, the endpoint's own engine, real
// processes): many connections, output windows never acknowledged, processes by the hundred,
// large answers over many connections. The endpoint runs in this process, as in the extension
// host, so this process's RSS is what the user's Local terminals would lose to an OOM.
// docs/security.md, "Agent endpoint: threat model" (bounds per endpoint).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AGENT_LIMITS } from '../../../src/extension/agent/limits';
import { RawAgent, removeDir, startEndpoint, startParams, tmpDir, type EndpointFixture } from '../../support/agent-attack';
import { waitFor } from '../../support/wait';
import { uri } from '../../support/agent-attack';

// The bounds as numbers (the attacks also ran against code that had none).
const CONNECTIONS = 16;
const HELD = 64;

let ws: string;
before(() => {
  ws = tmpDir('agent-limits-');
});
after(() => removeDir(ws));

async function withEndpoint(body: (f: EndpointFixture) => Promise<void>): Promise<void> {
  const f = await startEndpoint({ policy: 'neverAsk', roots: [ws] });
  try {
    await body(f);
  } finally {
    await f.stop();
  }
}

/**
 * The agent reads every frame but keeps no notification (process output is dropped as it
 * arrives): what grows is the endpoint's side, not the attacker's.
 */
function discardNotifications(a: RawAgent): { bytes: number } {
  const seen = { bytes: 0 };
  const [dispatch] = a.ws.listeners('message') as ((data: unknown) => void)[];
  a.ws.removeAllListeners('message');
  a.ws.on('message', (data: Buffer) => {
    const head = data.subarray(0, 64).toString();
    if (head.includes('"method"') && !head.includes('"id"')) {
      seen.bytes += data.length; // a notification
      return;
    }
    dispatch(data);
  });
  return seen;
}

/**
 * This process's RSS growth (MiB) at its peak while `during` runs and until the RSS has made no
 * new peak for `settleMs` (what the flood could take has been taken), sampled every 50 ms.
 */
async function rssGrowth(settleMs: number, during: () => Promise<unknown> = async () => undefined): Promise<number> {
  global.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  let peakAt = Date.now();
  const sample = setInterval(() => {
    const rss = process.memoryUsage().rss;
    if (rss > peak + 1024 * 1024) peakAt = Date.now();
    peak = Math.max(peak, rss);
  }, 50);
  try {
    await during();
    await waitFor(() => Date.now() - peakAt > settleMs, { what: 'the RSS to stop growing', interval: 100, timeout: 120_000, detail: () => `peak +${((peak - base) / 1048576).toFixed(0)} MiB` });
  } finally {
    clearInterval(sample);
  }
  return (peak - base) / 1024 / 1024;
}

describe('agent endpoint memory attacks', () => {
  it('connections: beyond the cap per endpoint a connection gets a JSON-RPC error and is closed', async () => {
    await withEndpoint(async (f) => {
      const agents = await Promise.all(Array.from({ length: 24 }, () => RawAgent.connect(f.url, f.token)));
      try {
        const replies = await Promise.all(agents.map((a) => a.send('initialize', { clientName: 'flood' })));
        const ok = replies.filter((r) => r.result !== undefined).length;
        const refused = replies.filter((r) => /too many agent connections/.test(r.error?.message ?? '')).length;
        assert.equal(ok, CONNECTIONS, `${ok} of 24 connections were served`);
        assert.equal(refused, 24 - CONNECTIONS, 'the others are told why');
        await waitFor(() => f.endpoint.connectionCount <= CONNECTIONS, { what: 'the refused connections to be closed' });
        // A slot freed by a closed connection is usable again.
        agents[0].close();
        await waitFor(() => f.endpoint.connectionCount < CONNECTIONS, { what: 'the closed connection to leave' });
        const late = await RawAgent.connect(f.url, f.token);
        agents.push(late);
        assert.ok((await late.send('initialize', { clientName: 'late' })).result, 'a new connection is served once one closed');
        assert.equal(AGENT_LIMITS.maxConnections, CONNECTIONS);
      } finally {
        for (const a of agents) a.close();
      }
    });
  });

  it('an output window without flow control: retention does not follow output nobody acknowledges', async () => {
    await withEndpoint(async (f) => {
      const a = await RawAgent.connect(f.url, f.token);
      try {
        await a.handshake(); // no flowControl: the window is never enforced
        discardNotifications(a);
        // 4 x 100 MB of output, a window of 1 byte each, nothing acknowledged (no process/ack is possible).
        const grown = await rssGrowth(1_000, async () => {
          for (let i = 0; i < 4; i++) {
            const r = await a.send('process/start', startParams(`w${i}`, ['/bin/sh', '-c', 'head -c 100000000 /dev/zero'], ws, { outputWindow: 1 }));
            assert.ok(r.result, `w${i} started: ${r.error?.message}`);
          }
          for (let i = 0; i < 4; i++) {
            await waitFor(async () => ((await a.send('process/read', { processId: `w${i}`, afterSeq: 0, maxBytes: 1, waitMs: 0 })).result as { exited: boolean }).exited, {
              what: `w${i} to exit`,
              interval: 100,
              timeout: 60_000,
            });
          }
        });
        // Before: each process retained all 100 MB it wrote (+508 MiB); after, +74 (what crossed the websocket).
        assert.ok(grown < 150, `memory grew by ${grown.toFixed(0)} MiB`);
      } finally {
        a.close();
      }
    });
  });

  it('output windows never acknowledged: their sum per endpoint is bounded, the rest refused clearly', async () => {
    await withEndpoint(async (f) => {
      const a = await RawAgent.connect(f.url, f.token);
      try {
        const init = await a.send('initialize', { clientName: 'windows', flowControl: true });
        assert.ok(init.result);
        a.notify('initialized', {});
        const seen = discardNotifications(a);
        const window = 32 * 1024 * 1024;
        let started = 0;
        const refusals: string[] = [];
        const grown = await rssGrowth(1_500, async () => {
          for (let i = 0; i < 6; i++) {
            const r = await a.send('process/start', startParams(`u${i}`, ['/bin/sh', '-c', 'head -c 40000000 /dev/zero; sleep 20'], ws, { outputWindow: window }));
            if (r.result) started++;
            else refusals.push(r.error?.message ?? '');
          }
          // Until every started window is full (its output sent as base64: 4/3 of the bytes).
          await waitFor(() => seen.bytes >= started * window * 1.33, { what: 'the windows to fill', interval: 100, timeout: 90_000, detail: () => `${seen.bytes} bytes of notifications` });
        });
        // Before: 6 windows of 32 MiB filled and retained (+192 MiB).
        assert.ok(grown < 100, `memory grew by ${grown.toFixed(0)} MiB (${started} started)`);
        assert.ok(started >= 1, 'one window within the budget still runs');
        assert.equal(refusals.length, 6 - started);
        for (const m of refusals) assert.match(m, /outputWindow of \d+ bytes does not fit/);
      } finally {
        a.close();
      }
    });
  });

  it('processes by the hundred: the processes the endpoint holds are bounded, the rest refused clearly', async () => {
    await withEndpoint(async (f) => {
      const agents = [await RawAgent.connect(f.url, f.token), await RawAgent.connect(f.url, f.token)];
      try {
        for (const a of agents) await a.handshake();
        const n = HELD + 8;
        const replies = await Promise.all(
          Array.from({ length: n }, (_, i) => agents[i % 2].send('process/start', startParams(`s${i}`, ['/bin/sh', '-c', 'head -c 1000000 /dev/zero | tr "\\0" x; sleep 20'], ws))),
        );
        const ok = replies.filter((r) => r.result !== undefined).length;
        // Before: every one ran, each retaining its 1 MB of output (1 024 per session, per connection).
        assert.equal(ok, HELD, `${ok} of ${n} started`);
        for (const r of replies.filter((x) => x.error)) assert.match(r.error?.message ?? '', /too many processes held by this server/);
        assert.equal(AGENT_LIMITS.maxHeldProcesses, HELD);
      } finally {
        for (const a of agents) a.close();
      }
    });
  });

  it('large answers over many connections that do not read: bounded per endpoint, not per connection', async () => {
    const file = path.join(ws, 'big.bin');
    writeFileSync(file, Buffer.alloc(12 * 1024 * 1024, 0x62));
    await withEndpoint(async (f) => {
      const agents = await Promise.all(Array.from({ length: 12 }, () => RawAgent.connect(f.url, f.token)));
      try {
        for (const a of agents) await a.handshake();
        for (const a of agents) a.stopReading();
        const grown = await rssGrowth(2_000, async () => {
          for (const a of agents) for (let i = 0; i < 3; i++) void a.send('fs/readFile', { path: uri(file) });
        });
        // Before: 2 answers (16 MiB of base64 each) per connection, 12 connections: +384 MiB and more.
        assert.ok(grown < 150, `memory grew by ${grown.toFixed(0)} MiB`);
      } finally {
        for (const a of agents) a.close();
      }
    });
  });
});
