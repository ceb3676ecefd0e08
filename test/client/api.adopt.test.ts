// Adopting the processes of a resumed session (a window reload re-attaching its terminals): a
// second client resumes the first one's session by id, reads each process's retained output
// from the start and follows it live — every byte once, input works, a flow-controlled process
// keeps running on the new client's acks, an evicted head is history rather than a failure.
import assert from 'node:assert/strict';
import * as os from 'node:os';
import { after, describe, it } from 'node:test';
import { connectWebSocket } from '../../src/client/connect';
import type { ProcessHandle } from '../../src/client/api';
import { ExecServer } from '../../src/server/exec-server';
import { serveConnection } from '../../src/transports/serve';
import { listenWebSocket } from '../../src/transports/websocket-server';
import { waitFor } from '../support/wait';

const server = new ExecServer();
const listening = listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
after(async () => {
  await (await listening).close();
  await server.shutdown();
});


function collect(h: ProcessHandle): { text: () => string; bytes: () => number } {
  const parts: Buffer[] = [];
  h.onOutput((e) => parts.push(Buffer.from(e.data)));
  return { text: () => Buffer.concat(parts).toString('utf8'), bytes: () => parts.reduce((n, p) => n + p.length, 0) };
}

const sh = (script: string) => ({ argv: ['/bin/sh', '-c', script], cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });

describe('client.adoptProcess after resuming a session', () => {
  it('shows the output from the start, then live output, and takes input — nothing twice', async () => {
    const { url } = await listening;
    const a = await connectWebSocket(url, { reconnect: false });
    const h = await a.startProcess({ ...sh('echo first-line; while read l; do echo "got:$l"; done'), pipeStdin: true });
    const seenByA = collect(h);
    await waitFor(() => seenByA.text().includes('first-line'), { what: 'first output' });
    await h.write('one\n');
    await waitFor(() => seenByA.text().includes('got:one'), { what: 'echo of one' });
    const session = a.sessionId;
    await a.close(); // the window reloads: the session is detached, the process keeps running

    const b = await connectWebSocket(url, { reconnect: false, resumeSessionId: session });
    try {
      assert.equal(b.sessionId, session, 'the session was resumed');
      const adopted = await b.adoptProcess(h.processId);
      const seen = collect(adopted);
      await waitFor(() => seen.text().includes('got:one'), { what: 'retained output' });
      assert.equal(await adopted.write('two\n'), 'accepted');
      await waitFor(() => seen.text().includes('got:two'), { what: 'live output' });
      assert.equal(seen.text(), 'first-line\ngot:one\ngot:two\n');
      await adopted.closeStdin();
      assert.equal(await adopted.exited, 0);
      await adopted.closed;
    } finally {
      await b.close();
    }
  });

  it('a flow-controlled process produced more than its window while detached: the adopter acks it through to the end', async () => {
    const { url } = await listening;
    const a = await connectWebSocket(url, { reconnect: false });
    const total = 3_000_000;
    // 3 MB with a 64 KiB window: the server stops reading the child whenever 64 KiB are unacknowledged.
    const h = await a.startProcess({ ...sh(`head -c ${total} /dev/zero | tr '\\0' x; echo; echo end-mark`), outputWindow: 65_536, manualAck: true });
    const firstBytes = collect(h);
    await waitFor(() => firstBytes.bytes() > 10_000, { what: 'some output' });
    const session = a.sessionId;
    await a.close(); // nothing acknowledged after this: the process is held at its window

    const b = await connectWebSocket(url, { reconnect: false, resumeSessionId: session });
    try {
      const adopted = await b.adoptProcess(h.processId, { outputWindow: 65_536, manualAck: true });
      let last = '';
      let bytes = 0;
      adopted.onOutput((e) => {
        bytes += e.data.length;
        last = (last + Buffer.from(e.data).toString('latin1')).slice(-40);
        adopted.acknowledge?.(e.data.length); // a terminal acks what it wrote
      });
      await Promise.race([adopted.closed, new Promise((_, rej) => setTimeout(() => rej(new Error(`stalled after ${bytes} bytes (last: ${JSON.stringify(last)})`)), 30_000))]);
      assert.equal(adopted.exitCode, 0);
      assert.match(last, /x\nend-mark\n$/);
      assert.ok(bytes > 0 && bytes <= total + 10, `adopter saw ${bytes} bytes`);
    } finally {
      await b.close();
    }
  });

  it('output evicted while detached (beyond the 1 MiB retention) is skipped as history, the rest arrives in order', async () => {
    const { url } = await listening;
    const a = await connectWebSocket(url, { reconnect: false, flowControl: false });
    const h = await a.startProcess(sh('i=0; while [ $i -lt 40000 ]; do echo "line-$i-padding-padding-padding"; i=$((i+1)); done; echo done-mark; sleep 30'));
    const session = a.sessionId;
    await a.close();
    const b = await connectWebSocket(url, { reconnect: false, resumeSessionId: session, flowControl: false });
    try {
      // It writes ≈1.4 MB: more than retention keeps. Adopted once the head is evicted.
      const evicted = async () => ((await b.request('process/read', { processId: h.processId, afterSeq: 0, maxBytes: 1, waitMs: 0 })).evictedThroughSeq ?? 0) > 0;
      await waitFor(evicted, { what: 'retention to evict a head', interval: 50 });
      const adopted: ProcessHandle = await b.adoptProcess(h.processId);
      const seen = collect(adopted);
      await waitFor(() => seen.text().includes('done-mark'), { what: 'the end of the stream' });
      const text = seen.text();
      assert.doesNotMatch(text, /^line-0-/, 'the evicted head is not there');
      const nums = [...text.matchAll(/^line-(\d+)-padding-padding-padding$/gm)].map((m) => Number(m[1]));
      assert.ok(nums.length > 1000, `${nums.length} whole lines`);
      nums.forEach((n, i) => i > 0 && assert.equal(n, nums[i - 1] + 1, `line ${n} follows ${nums[i - 1]}`));
      assert.equal(nums[nums.length - 1], 39_999);
      await adopted.terminate();
    } finally {
      await b.close();
    }
  });

  it('an unknown process id rejects and leaves nothing behind; a session still attached elsewhere is waited for', async () => {
    const { url } = await listening;
    const a = await connectWebSocket(url, { reconnect: false });
    const session = a.sessionId;
    setTimeout(() => void a.close(), 600); // the old window's connection ends a little later
    const started = Date.now();
    const b = await connectWebSocket(url, { reconnect: false, resumeSessionId: session, recoveryTimeoutMs: 10_000 });
    try {
      assert.equal(b.sessionId, session);
      assert.ok(Date.now() - started >= 500, 'resumed only after the old connection ended');
      await assert.rejects(b.adoptProcess('no-such-process'), /unknown process/i);
      await assert.rejects(b.adoptProcess('no-such-process'), /unknown process/i); // not registered by the failed attempt
    } finally {
      await b.close();
    }
    await assert.rejects(connectWebSocket(url, { reconnect: false, resumeSessionId: 'no-such-session' }), /unknown session/);
  });

  it('a session the server no longer has: the client log and the process error name it by its tag, never by its id', async () => {
    const server2 = new ExecServer({ detachedSessionTtlMs: 100 });
    const l1 = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server2, t) });
    const port = l1.port;
    const logs: string[] = [];
    const a = await connectWebSocket(l1.url, { recoveryTimeoutMs: 10_000, reconnectDelayMs: 50, log: (_l, m) => logs.push(m) });
    const session = a.sessionId;
    try {
      const h = await a.startProcess(sh('sleep 30'));
      let error = '';
      h.onClose((e) => (error = e.error ?? ''));
      await l1.close();
      await waitFor(() => server2.sessionCount === 0, { what: 'the detached session to expire (100 ms TTL)' });
      const l2 = await listenWebSocket({ host: '127.0.0.1', port, onConnection: (t) => serveConnection(server2, t) });
      try {
        await h.closed;
        assert.match(error, /session lost: .*unknown session id session #[0-9a-f]{8}/);
        assert.ok(logs.some((m) => /cannot resume session #/.test(m)), logs.join('\n'));
        for (const text of [error, ...logs]) assert.ok(!text.includes(session), `no session id in: ${text}`);
      } finally {
        await l2.close();
      }
    } finally {
      await a.close();
      await server2.shutdown();
    }
  });
});
