// Terminals that survive (docs/reliability.md) with real servers, sockets and PTYs: the terminal says
// "connection lost — reconnecting…" as soon as the link drops (not after the ~25 s recovery
// timeout) and "reconnected" when the session resumed, with every output line exactly once; a
// server killed under the terminal ends the process with a message and an offer to start it
// again, which Enter does on the restarted server; a closed-then-detached terminal (a window
// reload) leaves its process running for the next window, which adopts it with its earlier
// output; the records a reloaded window reads survive bad input.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { ExecClient } from '../../../src/client/api';
import { connectWebSocket } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { serveConnection } from '../../../src/transports/serve';
import { listenWebSocket } from '../../../src/transports/websocket-server';
import { ExecTerminal, type ExecTerminalOptions } from '../../../src/extension/terminals/exec-terminal';
import { followConnection, lossMessage, MAX_TERMINAL_RECORDS, readTerminalRecords, restorePlan, TerminalRecords, type TerminalRecord } from '../../../src/extension/terminals/survival';
import { startDropProxy } from '../../support/drop-proxy';
import { tempDir } from '../../support/tmp';
import { waitFor } from '../../support/wait';

const PATH = process.env.PATH ?? '/usr/bin:/bin';
const cleanups: (() => Promise<unknown> | void)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});


async function wsServer(port = 0) {
  const server = new ExecServer();
  const listener = await listenWebSocket({ host: '127.0.0.1', port, onConnection: (t) => serveConnection(server, t) });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await listener.close();
    await server.shutdown();
  };
  cleanups.push(stop);
  return { url: listener.url, port: Number(new URL(listener.url).port), stop };
}

/** A shell terminal over `client`, following its connection as TerminalService wires it. */
function shell(client: () => Promise<ExecClient>, extra: Partial<ExecTerminalOptions> = {}) {
  let out = '';
  const closes: (number | void)[] = [];
  let watching: { dispose(): void } | undefined;
  const startNew: ExecTerminalOptions['start'] = async (d, flow) => {
    const c = await client();
    const h = await c.startProcess({ argv: ['/bin/sh'], cwd: '/tmp', env: { PATH, PS1: '$ ' }, tty: true, rows: d?.rows, cols: d?.columns, ...flow });
    watching?.dispose();
    watching = followConnection(c, term);
    return h;
  };
  const term: ExecTerminal = new ExecTerminal({ mode: 'pty', start: startNew, restart: startNew, ...extra });
  term.onDidWrite((t) => (out += t));
  term.onDidClose((c) => closes.push(c));
  term.open({ rows: 24, columns: 100 });
  cleanups.push(() => term.close());
  return { term, output: () => out, closes };
}

describe('terminal: connection notices', () => {
  it('says "connection lost — reconnecting…" right after the drop and "reconnected" after the resume; no line lost or doubled', async () => {
    const s = await wsServer();
    const proxy = await startDropProxy(s.url);
    cleanups.push(() => proxy.close());
    const client = await connectWebSocket(proxy.url, { recoveryTimeoutMs: 25_000, reconnectDelayMs: 50 });
    cleanups.push(() => client.close());
    const { term, output } = shell(async () => client);
    term.handleInput('echo ready-$((40+2))\r');
    await waitFor(() => output().includes('ready-42'), { what: 'the shell', timeout: 20_000, detail: output });
    const session = client.sessionId;

    // A stream numbered line by line, cut in the middle while the server stays unreachable for a while.
    const from = output().length;
    const ended = path.join(tempDir('survival-'), 'stream-ended');
    term.handleInput(`i=1; while [ $i -le 2000 ]; do echo "n:$i:"; [ $((i % 200)) = 0 ] && sleep 0.1; i=$((i+1)); done; echo stream-done; : > ${ended}\r`);
    await waitFor(() => /n:300:/.test(output().slice(from)), { what: 'the stream', timeout: 20_000, detail: () => output().slice(-300) });
    proxy.refuse = true;
    const cut = Date.now();
    assert.ok(proxy.dropAll() > 0, 'a live connection was cut');
    await waitFor(() => output().includes('connection lost — reconnecting…'), { what: 'the lost notice', timeout: 5_000, detail: () => output().slice(-300) });
    const shownAfterMs = Date.now() - cut;
    assert.ok(shownAfterMs < 3_000, `shown ${shownAfterMs} ms after the drop`);
    assert.equal(client.state, 'recovering', 'still reconnecting when the notice shows');
    assert.ok(!output().includes('[Exec Server: reconnected]'));
    // Unreachable while the rest of the stream is written (the shell marks its end in a file), and
    // until two of the client's reconnect attempts were refused.
    const refused = proxy.refused;
    await waitFor(() => existsSync(ended) && proxy.refused >= refused + 2, { what: 'the stream to end and two refused reconnect attempts', timeout: 20_000 });
    assert.equal(client.state, 'recovering', 'still reconnecting after failed attempts');
    proxy.refuse = false;
    await waitFor(() => output().includes('[Exec Server: reconnected]'), { what: 'the reconnected notice', timeout: 20_000, detail: () => output().slice(-300) });
    await waitFor(() => /\r\nstream-done/.test(output().slice(from)), { what: 'the end of the stream', timeout: 30_000, detail: () => output().slice(-300) });
    assert.equal(client.sessionId, session, 'the same session');
    const lines = output().slice(from).match(/^n:\d+:/gm) ?? [];
    assert.equal(lines.length, 2000, 'every line once');
    lines.forEach((l, i) => assert.equal(l, `n:${i + 1}:`));
    assert.equal(output().split('connection lost — reconnecting…').length, 2, 'said once');
    // Still the same interactive shell.
    term.handleInput('echo after-$((6*7))\r');
    await waitFor(() => output().includes('after-42'), { what: 'input after the resume', timeout: 20_000, detail: output });
  });

  it('a server killed under the terminal: the message, then Enter starts the shell again on the restarted server', async () => {
    const first = await wsServer();
    const port = first.port;
    let current = await connectWebSocket(first.url, { recoveryTimeoutMs: 20_000, reconnectDelayMs: 50 });
    cleanups.push(() => current.close());
    const getClient = async () => {
      if (current.state === 'failed' || current.state === 'closed') current = await connectWebSocket(first.url, { reconnectDelayMs: 50 });
      return current;
    };
    const { term, output, closes } = shell(getClient);
    term.handleInput('echo one-$((1+1))\r');
    await waitFor(() => output().includes('one-2'), { what: 'the shell', timeout: 20_000, detail: output });
    await first.stop(); // the server and its processes are gone
    await waitFor(() => output().includes('connection lost — reconnecting…'), { what: 'the lost notice', timeout: 5_000, detail: () => output().slice(-300) });
    const again = await wsServer(port); // back on the same port, without the old session
    await waitFor(() => output().includes('press Enter to start it again'), { what: 'the end of the process and the offer', timeout: 20_000, detail: () => output().slice(-400) });
    assert.match(output(), /the server no longer has this session/);
    assert.doesNotMatch(output(), /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i, 'no session id on screen');
    assert.deepEqual(closes, [], 'the terminal stays open');
    assert.equal(term.isRunning, false);
    term.handleInput('\r');
    await waitFor(() => output().includes('starting it again'), { what: 'the restart', timeout: 5_000, detail: () => output().slice(-300) });
    term.handleInput('echo two-$((2+2))\r');
    await waitFor(() => output().includes('two-4'), { what: 'the new shell', timeout: 20_000, detail: () => output().slice(-300) });
    assert.equal(term.isRunning, true);
    term.handleInput('exit 5\r');
    await waitFor(() => closes.length === 1, { what: 'closed with the exit code', timeout: 20_000 });
    assert.deepEqual(closes, [5]);
    await again.stop();
  });
});

describe('terminal: reconnecting gives up', () => {
  it('a server that stays away: the terminal says the reconnect failed and offers to start again; Enter does once it is back', async () => {
    const first = await wsServer();
    const port = first.port;
    let current = await connectWebSocket(first.url, { recoveryTimeoutMs: 1_500, reconnectDelayMs: 50 });
    cleanups.push(() => current.close());
    const getClient = async () => {
      if (current.state === 'failed' || current.state === 'closed') current = await connectWebSocket(first.url, { reconnectDelayMs: 50 });
      return current;
    };
    const { term, output, closes } = shell(getClient);
    term.handleInput('echo up-$((2+2))\r');
    await waitFor(() => output().includes('up-4'), { what: 'the shell', timeout: 20_000, detail: output });
    await first.stop(); // gone, and not back within the recovery time
    await waitFor(() => output().includes('connection lost — reconnecting…'), { what: 'the lost notice', timeout: 5_000, detail: () => output().slice(-300) });
    await waitFor(() => output().includes('press Enter to start it again'), { what: 'the give-up and the offer', timeout: 20_000, detail: () => output().slice(-400) });
    assert.match(output(), /could not reconnect: /);
    assert.deepEqual(closes, []);
    // Enter while the server is still away: the start fails, said in the terminal, offered again.
    term.handleInput('\r');
    await waitFor(() => output().split('press Enter to start it again').length === 3, { what: 'the failed start and a new offer', timeout: 20_000, detail: () => output().slice(-400) });
    const back = await wsServer(port);
    term.handleInput('\r');
    term.handleInput('echo back-$((3+3))\r');
    await waitFor(() => output().includes('back-6'), { what: 'the new shell', timeout: 20_000, detail: () => output().slice(-300) });
    term.handleInput('exit\r');
    await waitFor(() => closes.length === 1, { what: 'closed' });
    await back.stop();
  });
});

describe('terminal: across a window reload', () => {
  it('closed then detached (a reload): the process lives on; the next window adopts it with its earlier output and input works', async () => {
    const s = await wsServer();
    const a = await connectWebSocket(s.url, { reconnect: false });
    const { term, output } = shell(async () => a, { terminateDelayMs: 500 });
    term.handleInput('X=kept; echo before-reload-$((3+4))\r');
    await waitFor(() => output().includes('before-reload-7'), { what: 'the shell', timeout: 20_000, detail: output });
    const processId = term.processHandle!.processId;
    const session = a.sessionId;
    term.close(); // VS Code closes every terminal on a reload…
    term.detach(); // …and the extension host goes away right after
    await a.close(); // a terminate close() had left pending could only go through `a`: no wait past the delay

    const b = await connectWebSocket(s.url, { reconnect: false, resumeSessionId: session });
    cleanups.push(() => b.close());
    const next = shell(async () => b, { start: async (_d, flow) => b.adoptProcess(processId, flow) });
    await waitFor(() => next.output().includes('before-reload-7'), { what: 'the earlier output', timeout: 20_000, detail: next.output });
    next.term.handleInput('echo "still-$X"\r');
    await waitFor(() => next.output().includes('still-kept'), { what: 'input to the same shell', timeout: 20_000, detail: next.output });
    assert.equal(next.term.processHandle!.processId, processId);

    // Without the detach, a close terminates the process after the delay.
    next.term.close();
    await waitFor(() => next.term.isRunning === false, { what: 'the process terminated', timeout: 10_000 });
  });

  it('a shell that ended while the window reloaded shows its end and offers to start again', async () => {
    const s = await wsServer();
    const a = await connectWebSocket(s.url, { reconnect: false });
    const h = await a.startProcess({ argv: ['/bin/sh', '-c', 'echo last-words; exit 3'], cwd: '/tmp', env: { PATH }, tty: true });
    await h.exited;
    const session = a.sessionId;
    await a.close();
    const b = await connectWebSocket(s.url, { reconnect: false, resumeSessionId: session });
    cleanups.push(() => b.close());
    const t = shell(async () => b, { start: async (_d, flow) => b.adoptProcess(h.processId, flow) });
    await waitFor(() => t.output().includes('exited with code 3 — press Enter to start it again'), { what: 'the offer', timeout: 20_000, detail: t.output });
    assert.ok(t.output().includes('last-words'), 'its output is shown');
    assert.deepEqual(t.closes, []);
    t.term.handleInput('\r');
    t.term.handleInput('echo fresh-$((5+5))\r');
    await waitFor(() => t.output().includes('fresh-10'), { what: 'a new shell', timeout: 20_000, detail: t.output });
    t.term.handleInput('exit\r');
    await waitFor(() => t.closes.length === 1, { what: 'closed' });
  });

  it('a process the server no longer knows: the error and the restart offer; another key closes the terminal', async () => {
    const s = await wsServer();
    const b = await connectWebSocket(s.url, { reconnect: false });
    cleanups.push(() => b.close());
    const t = shell(async () => b, { start: async (_d, flow) => b.adoptProcess('gone-process', flow) });
    await waitFor(() => t.output().includes('press Enter to start it again'), { what: 'the offer', timeout: 20_000, detail: t.output });
    assert.match(t.output(), /unknown process/i);
    t.term.handleInput('q');
    assert.equal(t.closes.length, 1);
  });
});

describe('terminal records', () => {
  it('a loss is said in words, never with a session id', () => {
    const id = '8427c5fa-3751-413f-b673-655681cfe491';
    assert.equal(lossMessage(`session lost: unknown session id ${id}`), 'the server no longer has this session (it restarted, or the session expired)');
    assert.equal(lossMessage('reconnect failed: connect ECONNREFUSED 127.0.0.1:4000'), 'could not reconnect: connect ECONNREFUSED 127.0.0.1:4000');
    assert.equal(lossMessage(`reconnect failed: session ${id} is already attached`), 'could not reconnect: session … is already attached');
    assert.equal(lossMessage('output of process p1 was lost while reconnecting'), 'output of process p1 was lost while reconnecting');
  });

  const rec = (processId: string, extra: Partial<TerminalRecord> = {}): TerminalRecord => ({
    environment: 'dev', sessionId: 's1', processId, name: 'bash (dev)', argv: ['/bin/bash'], cwd: '/home/u', ...extra,
  });
  function memento() {
    const data = new Map<string, unknown>();
    return { get: (k: string) => data.get(k), update: async (k: string, v: unknown) => void data.set(k, JSON.parse(JSON.stringify(v))), data };
  }

  it('keeps only well-formed records, at most MAX_TERMINAL_RECORDS', () => {
    assert.deepEqual(readTerminalRecords(undefined), []);
    assert.deepEqual(readTerminalRecords({ length: 1 }), []);
    const bad = [null, 7, { ...rec('a'), argv: [] }, { ...rec('b'), argv: [1] }, { ...rec('c'), sessionId: '' }, { ...rec('d'), cwd: 5 }];
    assert.deepEqual(readTerminalRecords([...bad, rec('ok')]), [rec('ok')]);
    const many = Array.from({ length: MAX_TERMINAL_RECORDS + 5 }, (_, i) => rec(`p${i}`));
    const read = readTerminalRecords(many);
    assert.equal(read.length, MAX_TERMINAL_RECORDS);
    assert.equal(read[read.length - 1].processId, `p${MAX_TERMINAL_RECORDS + 4}`, 'the newest are kept');
  });

  it('put replaces by process id, remove drops it; writes land in call order', async () => {
    const m = memento();
    const records = new TerminalRecords(m);
    void records.put(rec('a'));
    void records.put(rec('b'));
    void records.put(rec('a', { name: 'renamed' }));
    await records.remove('b');
    assert.deepEqual(records.list(), [rec('a', { name: 'renamed' })]);
  });

  it('the restore plan takes each restorable environment\'s newest session; older sessions are gone, others skipped', () => {
    const plan = restorePlan([rec('a', { sessionId: 'old' }), rec('b', { sessionId: 'new' }), rec('c', { environment: 'local-ish' }), rec('d', { sessionId: 'new' })], (e) => e === 'dev');
    assert.equal(plan.length, 1);
    assert.equal(plan[0].sessionId, 'new');
    assert.deepEqual(plan[0].records.map((r) => r.processId), ['b', 'd']);
    assert.deepEqual(plan[0].gone.map((r) => r.processId), ['a']);
  });
});
