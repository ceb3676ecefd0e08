// The agent endpoint end to end in plain Node: a real loopback websocket listener serving its
// own ExecServer, the project's client as the agent, and the agent gate in between.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { connectWebSocket } from '../../../src/client/connect';
import { RpcError } from '../../../src/protocol/errors';
import { sha256 } from '../../../src/transports/ws-auth';
import { AgentEndpoint, checkBearer, withoutSessionIds, type AgentProcess } from '../../../src/extension/agent/endpoint';
import type { ApprovalPolicy } from '../../../src/extension/approval/policy';
import { RawAgent } from '../../support/agent-attack';
import { waitFor } from '../../support/wait';

let dir: string;
before(() => {
  dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'vscode-agent-')));
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** An endpoint whose questions are answered by `answer` (and recorded). */
async function endpoint(policy: ApprovalPolicy, answer: (msg: string) => string | undefined, roots: string[] = []) {
  const prompts: string[] = [];
  const started: AgentProcess[] = [];
  const ep = await AgentEndpoint.start({
    port: 0,
    gate: {
      policy: () => policy,
      sandboxAll: () => false,
      timeoutMs: () => 10_000,
      workspaceRoots: () => roots,
      ask: async (q) => {
        prompts.push(q.message);
        return answer(q.message);
      },
    },
    onProcessStarted: (p) => started.push(p),
  });
  return { ep, prompts, started };
}

describe('agent endpoint', () => {
  it('checkBearer accepts only the exact token, whatever the header shape', () => {
    const digest = sha256('right-token');
    assert.deepEqual(checkBearer({ headers: { authorization: 'Bearer right-token' } }, digest), { ok: true });
    assert.deepEqual(checkBearer({ headers: { authorization: 'bearer right-token' } }, digest), { ok: true });
    for (const h of [undefined, '', 'Bearer wrong', 'Bearer right-tokenx', 'Basic right-token', 'Bearer']) {
      const r = checkBearer({ headers: { authorization: h } }, digest);
      assert.equal(r.ok, false, `header ${h}`);
      assert.equal(!r.ok && r.status, 401);
    }
  });

  it('listens on 127.0.0.1 with a fresh token; no token or a wrong one gets HTTP 401', async () => {
    const { ep } = await endpoint('neverAsk', () => undefined);
    const other = await endpoint('neverAsk', () => undefined);
    try {
      assert.match(ep.url, /^ws:\/\/127\.0\.0\.1:\d+$/);
      assert.ok(ep.token.length >= 32);
      assert.notEqual(ep.token, other.ep.token, 'each endpoint gets its own random token');
      await assert.rejects(connectWebSocket(ep.url, { token: '', reconnect: false }), /401/);
      await assert.rejects(connectWebSocket(ep.url, { token: other.ep.token, reconnect: false }), /401/);
      const c = await connectWebSocket(ep.url, { token: ep.token, reconnect: false });
      assert.equal(typeof (await c.environmentInfo()).shell.path, 'string');
      await c.close();
    } finally {
      await ep.stop();
      await other.ep.stop();
    }
  });

  it('session ids are taken out of every log line', () => {
    assert.equal(withoutSessionIds('agent: new session 0b7e5f5c-3c1d-4e7a-9a4b-1f2e3d4c5b6a ok'), 'agent: new session <session> ok');
  });

  it('a denied request answers a JSON-RPC error and changes nothing; metadata needs no approval', async () => {
    const { ep, prompts } = await endpoint('alwaysAsk', () => 'Deny');
    const c = await connectWebSocket(ep.url, { token: ep.token, reconnect: false });
    try {
      const target = path.join(dir, 'denied.txt');
      const err = await c.fs.writeFile(target, new TextEncoder().encode('no')).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof RpcError, 'rejected with an RpcError');
      assert.equal(err.code, -32600);
      assert.match(err.message, /permission denied.*not approved/);
      assert.equal(existsSync(target), false);
      await assert.rejects(c.startProcess({ argv: ['/bin/sh', '-c', `touch ${path.join(dir, 'ran')}`], cwd: dir }), /not approved/);
      assert.equal(existsSync(path.join(dir, 'ran')), false);
      assert.equal(prompts.length, 2);
      assert.match(prompts[0], new RegExp(`^Exec Server: agent connection #\\d+ \\(127\\.0\\.0\\.1:\\d+\\), client "[^"]+" wants to write 2 bytes to ${target}$`));
      assert.ok(prompts[1].includes(`wants to run (unsandboxed) /bin/sh -c 'touch ${path.join(dir, 'ran')}' in ${dir}`), prompts[1]);
      // Metadata is not gated; under alwaysAsk a listing is.
      await c.fs.stat(dir);
      assert.equal(prompts.length, 2);
      await assert.rejects(c.fs.readDirectory(dir), /not approved/);
      assert.equal(prompts.length, 3);
    } finally {
      await c.close();
      await ep.stop();
    }
  });

  it('allowed processes run and are reported with their live output; Allow for Session stops the questions', async () => {
    const { ep, prompts, started } = await endpoint('alwaysAsk', () => 'Allow for Session');
    const c = await connectWebSocket(ep.url, { token: ep.token, reconnect: false });
    try {
      const h = await c.startProcess({ argv: ['/bin/sh', '-c', 'echo agent-out; exit 4'], cwd: dir });
      assert.equal(await h.exited, 4);
      assert.equal(started.length, 1);
      const seen = started[0];
      assert.deepEqual(seen.argv, ['/bin/sh', '-c', 'echo agent-out; exit 4']);
      // Output that arrived before anyone listened is replayed to the first listener.
      let text = '';
      seen.onOutput((e) => (text += Buffer.from(e.data).toString()));
      await seen.closed;
      assert.equal(text, 'agent-out\n');
      assert.equal(seen.exitCode, 4);
      assert.equal(await seen.write('x'), 'stdinClosed', 'the watcher cannot type into the agent process');
      await c.fs.writeFile(path.join(dir, 'two.txt'), new TextEncoder().encode('two'));
      assert.equal(readFileSync(path.join(dir, 'two.txt'), 'utf8'), 'two');
      assert.equal(prompts.length, 2, 'the write is not covered by the grant for /bin/sh');
      await c.startProcess({ argv: ['/bin/sh', '-c', 'exit 0'], cwd: dir });
      assert.equal(prompts.length, 2, 'the same program in the same cwd is covered');
    } finally {
      await c.close();
      await ep.stop();
    }
  });

  it('a watched process: output before the answer, in order, each chunk once, to listeners subscribed in one turn; the agent leaving ends it without an error', async () => {
    const { ep, started } = await endpoint('neverAsk', () => undefined);
    const c = await connectWebSocket(ep.url, { token: ep.token, reconnect: false });
    try {
      const h = await c.startProcess({ argv: ['/bin/sh', '-c', 'for i in 1 2 3 4 5; do echo line$i; done; sleep 60'], cwd: dir });
      let agentText = '';
      h.onOutput((e) => (agentText += Buffer.from(e.data).toString()));
      await waitFor(() => agentText.includes('line5'), { what: 'line5 at the agent', timeout: 10_000 }).catch(() => undefined);
      assert.equal(agentText, 'line1\nline2\nline3\nline4\nline5\n');
      assert.equal(started.length, 1);
      const seen = started[0];
      // Subscribed late (as the terminal is): every chunk arrived before, and still arrives once, in order.
      const seqs: number[] = [];
      let text = '';
      seen.onOutput((e) => {
        seqs.push(e.seq);
        text += Buffer.from(e.data).toString();
      });
      let closeEvent: { error?: string } | undefined;
      seen.onClose((e) => (closeEvent = e));
      await new Promise((r) => setImmediate(r));
      assert.equal(text, agentText);
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
      assert.equal(new Set(seqs).size, seqs.length);
      assert.equal(seen.exitCode, undefined);
      await c.close(); // the agent leaves: its session is detached, the watcher sees no more
      await seen.closed;
      assert.deepEqual(closeEvent, {});
    } finally {
      await c.close();
      await ep.stop();
    }
  });

  it('askOutsideWorkspace writes inside the workspace without asking; the watcher can terminate an agent process', async () => {
    const { ep, prompts, started } = await endpoint('askOutsideWorkspace', (m) => (m.includes('sleep 60') ? 'Allow' : 'Deny'), [dir]);
    const c = await connectWebSocket(ep.url, { token: ep.token, reconnect: false });
    try {
      await c.fs.writeFile(path.join(dir, 'inside.txt'), new TextEncoder().encode('in'));
      assert.equal(prompts.length, 0);
      // An unsandboxed process asks even with its cwd inside the workspace.
      const h = await c.startProcess({ argv: ['/bin/sh', '-c', 'sleep 60'], cwd: dir });
      assert.equal(prompts.length, 1);
      assert.equal(started.length, 1);
      assert.equal(await started[0].terminate(), true);
      assert.notEqual(await h.exited, 0);
      await assert.rejects(c.fs.createDirectory('/tmp/outside-' + process.pid, false), /not approved/);
      assert.equal(prompts.length, 2);
    } finally {
      await c.close();
      await ep.stop();
    }
  });

  it('after stop, new connections are refused', async () => {
    const { ep } = await endpoint('neverAsk', () => undefined);
    const url = ep.url;
    await ep.stop();
    await assert.rejects(connectWebSocket(url, { token: ep.token, reconnect: false, connectTimeoutMs: 3000 }));
  });

  it('the endpoint’s watch budget is given back: fs/unwatch, a fired fs/watchMissing, a closed connection', async () => {
    const { ep } = await endpoint('neverAsk', () => undefined, [dir]);
    try {
      const a = await RawAgent.connect(ep.url, ep.token);
      await a.handshake();
      for (let i = 0; i < 64; i++) assert.ok((await a.send('fs/watch', { watchId: `w${i}`, path: pathToFileURL(dir).href })).result, `watch ${i}`);
      assert.match((await a.send('fs/watch', { watchId: 'over', path: pathToFileURL(dir).href })).error?.message ?? '', /at most 64 watches/);
      assert.ok((await a.send('fs/unwatch', { watchId: 'w0' })).result);
      const missing = path.join(dir, 'appears-later');
      assert.deepEqual((await a.send('fs/watchMissing', { watchId: 7, missing: [pathToFileURL(missing).href], present: null })).result, { watching: true });
      assert.match((await a.send('fs/watch', { watchId: 'over2', path: pathToFileURL(dir).href })).error?.message ?? '', /at most 64 watches/);
      writeFileSync(missing, 'here');
      await waitFor(() => a.notifications.some((n) => n.method === 'fs/missingChanged'), { what: 'fs/missingChanged', timeout: 5_000 });
      assert.ok((await a.send('fs/watch', { watchId: 'after-missing', path: pathToFileURL(dir).href })).result, 'the fired missing-watch gave its slot back');
      a.close();
      const b = await RawAgent.connect(ep.url, ep.token);
      await b.handshake();
      let i = 0;
      await waitFor(async () => (await b.send('fs/watch', { watchId: `b${i++}`, path: pathToFileURL(dir).href })).result !== undefined, {
        what: 'a closed connection to give its watches back',
        interval: 50,
        timeout: 5_000,
      });
      b.close();
    } finally {
      await ep.stop();
    }
  });
});
