// Session resume scenarios over a REAL websocket, through a proxy that cuts the TCP
// connections: used against our server (test/client/connect.recovery.test.ts) and the reference
// (test/interop/recovery-interop.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { connectWebSocket } from '../../src/client/connect';
import { RpcConnection } from '../../src/rpc/connection';
import { ErrorCodes, RpcError } from '../../src/protocol/errors';
import { connectWebSocketTransport } from '../../src/transports/websocket-client';
import { startDropProxy } from './drop-proxy';
import { cmdline, descendants } from './process';
import { sleep, waitFor } from './wait';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const cwd = new URL(`file://${os.tmpdir()}`).href;

export interface RecoveryScenarioOptions {
  /**
   * The server survives a process/start cut off by a disconnect (ours). The reference can
   * leave such an id stuck in "starting" (see docs/protocol.md, "Differences from the reference"), so it is not run there.
   */
  startSurvivesDrop?: boolean;
  /** Forced drops in the numbered-lines scenario (default 50, the bar). */
  dropRounds?: number;
}

export function defineRecoveryScenarios(
  label: string,
  startServer: () => Promise<{ url: string; stop(): Promise<void> }>,
  options: RecoveryScenarioOptions = {},
): void {
  test(`${label}: raw resume — drop the socket, initialize with resumeSessionId, catch up with process/read`, async () => {
    const server = await startServer();
    const transports: { close(): void }[] = [];
    try {
      const open = async () => {
        const t = await connectWebSocketTransport(server.url);
        transports.push(t);
        return { t, rpc: new RpcConnection(t) };
      };
      const a = await open();
      const live = new Map<number, string>();
      a.rpc.onNotification((n) => {
        const p = n.params as { seq: number; chunk?: string };
        if (n.method === 'process/output') live.set(p.seq, Buffer.from(p.chunk!, 'base64').toString());
      });
      const init = (await a.rpc.request('initialize', { clientName: 'resume-test' })) as { sessionId: string };
      a.rpc.notify('initialized', {});
      await a.rpc.request('process/start', {
        processId: 'stream',
        argv: ['sh', '-c', 'i=1; while [ $i -le 60 ]; do echo n$i; i=$((i+1)); sleep 0.02; done'],
        cwd,
        env: ENV,
        tty: false,
      });
      await waitFor(() => live.size >= 5, { what: 'first lines', timeout: 30_000 });
      a.t.socket.terminate(); // abrupt: no close handshake
      // Unknown session ids are refused with the reference's message.
      const bogus = await open();
      await assert.rejects(bogus.rpc.request('initialize', { clientName: 'x', resumeSessionId: '00000000-0000-4000-8000-000000000000' }), (e: unknown) => {
        assert.ok(e instanceof RpcError);
        assert.equal(e.code, ErrorCodes.InvalidRequest);
        assert.equal(e.message, 'unknown session id 00000000-0000-4000-8000-000000000000');
        return true;
      });
      bogus.t.close();
      // Resume (retry -32010 while the server has not noticed the old socket is gone).
      let b = await open();
      const resumed = await waitFor(
        async () => {
          try {
            return (await b.rpc.request('initialize', { clientName: 'resume-test', resumeSessionId: init.sessionId })) as { sessionId: string };
          } catch (e) {
            assert.ok(e instanceof RpcError && e.code === ErrorCodes.SessionAttached, String(e));
            b.t.close();
            b = await open();
            return undefined;
          }
        },
        { what: 'the session to be resumable', interval: 50, timeout: 30_000 },
      );
      assert.equal(resumed.sessionId, init.sessionId);
      const after = new Map<number, string>();
      let closedSeq = 0;
      b.rpc.onNotification((n) => {
        const p = n.params as { seq: number; chunk?: string };
        if (n.method === 'process/output') after.set(p.seq, Buffer.from(p.chunk!, 'base64').toString());
        if (n.method === 'process/closed') closedSeq = p.seq;
      });
      b.rpc.notify('initialized', {});
      const lastSeen = Math.max(...live.keys());
      const read = (await b.rpc.request('process/read', { processId: 'stream', afterSeq: lastSeen, waitMs: 0 })) as {
        chunks: { seq: number; chunk: string }[];
      };
      for (const c of read.chunks) after.set(c.seq, Buffer.from(c.chunk, 'base64').toString());
      await waitFor(() => closedSeq > 0, { what: 'process/closed on the resumed connection', timeout: 30_000 });
      const all = new Map([...live, ...after]);
      const text = [...all.entries()].sort((x, y) => x[0] - y[0]).map((e) => e[1]).join('');
      assert.equal(text, Array.from({ length: 60 }, (_, i) => `n${i + 1}\n`).join(''));
    } finally {
      for (const t of transports) t.close();
      await server.stop();
    }
  });

  test(`${label}: a second connection resuming an attached session gets -32010`, async () => {
    const server = await startServer();
    const a = new RpcConnection(await connectWebSocketTransport(server.url));
    const b = new RpcConnection(await connectWebSocketTransport(server.url));
    try {
      const init = (await a.request('initialize', { clientName: 'a' })) as { sessionId: string };
      a.notify('initialized', {});
      await assert.rejects(b.request('initialize', { clientName: 'b', resumeSessionId: init.sessionId }), (e: unknown) => {
        assert.ok(e instanceof RpcError);
        assert.equal(e.code, ErrorCodes.SessionAttached);
        assert.equal(e.message, `session ${init.sessionId} is already attached to another connection`);
        return true;
      });
    } finally {
      a.close();
      b.close();
      await server.stop();
    }
  });

  test(`${label}: client recovery — ${options.dropRounds ?? 50} forced drops during a gated numbered-lines stream, every line exactly once`, async () => {
    const server = await startServer();
    const proxy = await startDropProxy(server.url);
    const client = await connectWebSocket(proxy.url, { clientName: 'recovery', reconnectDelayMs: 50 });
    const logs: string[] = [];
    client.onLog((l) => logs.push(`${l.level} ${l.message}`));
    try {
      const LINES = 300;
      const ROUNDS = options.dropRounds ?? 50;
      // Each "go" line on stdin prints the next LINES numbered lines: a duplicated write would show as extra lines.
      const script = `n=0; while read x; do i=0; while [ $i -lt ${LINES} ]; do n=$((n+1)); echo line$n; i=$((i+1)); if [ $((i % 60)) = 0 ]; then sleep 0.01; fi; done; done`;
      const h = await client.startProcess({ argv: ['sh', '-c', script], cwd: os.tmpdir(), env: ENV, pipeStdin: true });
      let text = '';
      let lines = 0;
      const seqs: number[] = [];
      h.onOutput((e) => {
        seqs.push(e.seq);
        text += Buffer.from(e.data).toString();
        lines = text.split('\n').length - 1;
      });
      let drops = 0;
      for (let r = 0; r < ROUNDS; r++) {
        await waitFor(() => client.state === 'connected' && proxy.live > 0, { what: 'connected before the next drop', timeout: 30_000 });
        const write = h.write('go\n');
        if (r % 3 === 0) {
          // Drop while the write is in flight: it must be retried with the same writeId, once.
          drops += proxy.dropAll();
        } else {
          await waitFor(() => lines > r * LINES, { what: `round ${r} output`, timeout: 30_000 });
          drops += proxy.dropAll(); // mid-stream
        }
        assert.equal(await write, 'accepted');
        await waitFor(() => lines >= (r + 1) * LINES, { what: `round ${r} complete`, detail: () => `have ${lines} lines`, timeout: 60_000 });
      }
      // The last drop may not have been noticed yet: a retryable round trip settles that.
      await client.environmentInfo();
      await waitFor(() => client.state === 'connected', { what: 'connected at the end', timeout: 30_000 });
      assert.equal(drops, ROUNDS, 'every round cut one live connection');
      assert.ok(client.reconnects >= 5, `reconnects ${client.reconnects}`);
      const expected = Array.from({ length: LINES * ROUNDS }, (_, i) => `line${i + 1}\n`).join('');
      assert.equal(text.length, expected.length, 'no duplicated or missing output');
      assert.equal(text, expected);
      for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i] > seqs[i - 1]);
      assert.equal(await h.terminate(), true);
      await h.closed;
      assert.ok(logs.some((l) => /resumed/.test(l)), logs.join('\n'));
    } finally {
      await client.close();
      await proxy.close();
      await server.stop();
    }
  });

  test(`${label}: client recovery — drops at arbitrary moments of a free-running stream lose and duplicate nothing`, async () => {
    const server = await startServer();
    const proxy = await startDropProxy(server.url);
    const client = await connectWebSocket(proxy.url, { clientName: 'recovery', reconnectDelayMs: 20 });
    try {
      const N = 20_000;
      const script = `i=1; while [ $i -le ${N} ]; do echo line$i; if [ $((i % 500)) = 0 ]; then sleep 0.02; fi; i=$((i+1)); done`;
      const h = await client.startProcess({ argv: ['sh', '-c', script], cwd: os.tmpdir(), env: ENV });
      let text = '';
      h.onOutput((e) => (text += Buffer.from(e.data).toString()));
      let closed = false;
      void h.closed.then(() => (closed = true));
      let drops = 0;
      for (let i = 0; i < 400 && !closed; i++) {
        await sleep(15 + (i % 4) * 10); // chaos on a clock: a drop every 15–45 ms while the stream runs
        if (client.state === 'connected') drops += proxy.dropAll();
      }
      await h.closed;
      assert.equal(await h.exited, 0);
      assert.ok(drops >= 3, `only ${drops} drops happened during the stream`);
      const expected = Array.from({ length: N }, (_, i) => `line${i + 1}\n`).join('');
      assert.equal(text.length, expected.length, 'no duplicated or missing output');
      assert.equal(text, expected);
    } finally {
      await client.close();
      await proxy.close();
      await server.stop();
    }
  });

  if (options.startSurvivesDrop) test(`${label}: process/start in flight during a drop is resent; the process runs once and its output arrives once`, async () => {
    const server = await startServer();
    const proxy = await startDropProxy(server.url);
    const client = await connectWebSocket(proxy.url, { clientName: 'recovery', reconnectDelayMs: 20 });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'start-drop-'));
    try {
      for (let i = 0; i < 12; i++) {
        await waitFor(() => client.state === 'connected' && proxy.live > 0, { what: 'connected', timeout: 30_000 });
        const log = path.join(dir, `runs-${i}`);
        const started = client.startProcess({ argv: ['sh', '-c', `echo run >> '${log}'; echo out-${i}`], cwd: dir, env: ENV });
        // Cut at different moments: before the request is written, while it travels, after.
        if (i % 3 === 0) proxy.dropAll();
        else setTimeout(() => proxy.dropAll(), (i % 3) * 2);
        const h = await started;
        let out = '';
        h.onOutput((e) => (out += Buffer.from(e.data).toString()));
        assert.equal(await h.exited, 0);
        await h.closed;
        assert.equal(out, `out-${i}\n`);
        assert.equal(readFileSync(log, 'utf8'), 'run\n', 'started exactly once');
      }
    } finally {
      await client.close();
      await proxy.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`${label}: a process that exits while disconnected reports its output, exit and close after resume`, async () => {
    const server = await startServer();
    const proxy = await startDropProxy(server.url);
    const client = await connectWebSocket(proxy.url, { clientName: 'recovery', reconnectDelayMs: 50 });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'recovery-'));
    const marker = path.join(dir, 'finished');
    try {
      const h = await client.startProcess({
        argv: ['sh', '-c', `read x; echo after-$x; echo err-$x >&2; touch '${marker}'; exit 5`],
        cwd: dir,
        env: ENV,
        pipeStdin: true,
      });
      let out = '';
      h.onOutput((e) => (out += Buffer.from(e.data).toString()));
      const states: string[] = [];
      client.onDidChangeState((s) => states.push(s));
      // Cut the link and keep the server unreachable until the process has finished.
      proxy.refuse = true;
      proxy.dropAll();
      await waitFor(() => client.state === 'recovering', { what: 'recovering', timeout: 30_000 });
      const refused = proxy.refused;
      const write = h.write('go\n'); // queued until the session is resumed
      // The client's next attempt to get through was refused: the write had its chance and cannot have gone.
      await waitFor(() => proxy.refused > refused, { what: 'a refused reconnect attempt after the write', timeout: 30_000 });
      assert.equal(existsSync(marker), false, 'the write cannot have been delivered yet');
      proxy.refuse = false;
      assert.equal(await write, 'accepted');
      await waitFor(() => existsSync(marker), { what: 'process finished', timeout: 30_000 });
      proxy.refuse = true;
      proxy.dropAll();
      // Exit + close happen while detached: the shell is gone before the link comes back.
      await waitFor(() => !descendants(process.pid).some((p) => cmdline(p.pid).includes(marker)), { what: 'the shell to exit while detached', timeout: 30_000 });
      proxy.refuse = false;
      assert.equal(await h.exited, 5);
      await h.closed;
      assert.match(out, /after-go\n/);
      assert.match(out, /err-go\n/);
      assert.equal(out.length, 'after-go\nerr-go\n'.length);
      assert.ok(states.filter((s) => s === 'recovering').length >= 2, states.join(','));
      await waitFor(() => client.state === 'connected', { what: 'connected again', timeout: 30_000 });
    } finally {
      await client.close();
      await proxy.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
