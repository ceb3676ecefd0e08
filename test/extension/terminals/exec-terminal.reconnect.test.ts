// A terminal survives a network drop: the client resumes its session and the same PTY keeps
// taking input and producing output (nothing re-typed, nothing lost).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { connectWebSocket } from '../../../src/client/connect';
import { ExecServer } from '../../../src/server/exec-server';
import { serveConnection } from '../../../src/transports/serve';
import { listenWebSocket } from '../../../src/transports/websocket-server';
import { ExecTerminal } from '../../../src/extension/terminals/exec-terminal';
import { startDropProxy } from '../../support/drop-proxy';
import { waitFor } from '../../support/wait';

const server = new ExecServer();
after(() => server.shutdown());

describe('terminal across a connection drop', () => {
  it('keeps the same shell after the client resumes its session', async () => {
    const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
    const proxy = await startDropProxy(listener.url);
    const client = await connectWebSocket(proxy.url, { reconnect: true, clientName: 'vscode-drop-test' });
    let out = '';
    const term = new ExecTerminal({
      mode: 'pty',
      start: () => client.startProcess({ argv: ['/bin/sh'], cwd: '/tmp', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MARK: 'same-shell' }, tty: true }),
    });
    term.onDidWrite((t) => (out += t));
    term.open({ rows: 24, columns: 80 });
    try {
      term.handleInput('X=before-$((1+1))\r');
      term.handleInput('echo "$X"\r');
      await waitFor(() => out.includes('before-2'), { what: 'first echo' });
      const sessionId = client.sessionId;
      assert.ok(proxy.dropAll() > 0, 'a live connection was cut');
      // Output produced while the connection is down is caught up after the resume.
      term.handleInput('echo "after-$X-$MARK"\r');
      await waitFor(() => out.includes('after-before-2-same-shell'), { what: 'output after the drop' });
      assert.equal(client.sessionId, sessionId, 'the session was resumed, not replaced');
      assert.equal(term.isRunning, true);
      // A numbered stream with the connection cut while it runs: every line shows exactly once.
      const before = out.length;
      term.handleInput('i=1; while [ $i -le 3000 ]; do echo "n:$i:"; [ $((i % 300)) = 0 ] && sleep 0.05; i=$((i+1)); done; echo stream-done\r');
      await waitFor(() => /n:200:/.test(out.slice(before)), { what: 'stream started' });
      assert.ok(proxy.dropAll() > 0, 'cut during the stream');
      await waitFor(() => /\r\nstream-done/.test(out.slice(before)), { what: 'stream done' });
      const seen = out.slice(before).match(/^n:\d+:/gm) ?? [];
      assert.equal(seen.length, 3000, 'no line missing or shown twice');
      seen.forEach((l, i) => assert.equal(l, `n:${i + 1}:`));
      term.handleInput('exit 3\r');
      assert.equal((await term.result).exitCode, 3);
    } finally {
      term.close();
      await client.close();
      await proxy.close();
      await listener.close();
    }
  });
});
