// Attack (docs/security.md, "The listener"): slowloris on the CLI's websocket listener. Unauthenticated peers open
// connections and send half a request (headers never finished, or a TLS-less silence), so each
// holds a descriptor until Node's header timeout (60 s, checked every 30 s); about 1 050 of them
// fill a descriptor table of the usual 1 024 soft limit and a client WITH the token is refused
// for the rest of the wave. The server runs under a hard limit of 1 024 (prlimit; Node raises its soft limit to the hard one at startup, so the hard one is what counts).
// The holder of the token must get in while the attack is going on.
import assert from 'node:assert/strict';
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { attempt, cliPath, ensureBuilt, stopAll } from '../support/cli-servers';
import { tempDir } from '../support/security';
import { startServerProcess } from '../support/cli';

after(() => stopAll());

const TOKEN = 'slowloris-capability-token-Xk2Pq9';

function halfRequest(port: number): Promise<net.Socket> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n'); // never finished
      resolve(s);
    });
    s.on('error', () => resolve(s));
  });
}

test('attack: 1 100 half-sent requests do not lock out a client with the token (server descriptor limit 1 024, soft and hard: Node raises the soft one to the hard one itself)', async () => {
  ensureBuilt();
  const t = tempDir();
  const tokenFile = path.join(t.dir, 'token');
  writeFileSync(tokenFile, TOKEN);
  const cli = await startServerProcess('prlimit', [
    '--nofile=1024:1024', process.execPath, cliPath,
    '--listen', 'ws://127.0.0.1:0', '--ws-auth', 'capability-token', '--ws-token-file', tokenFile,
  ], { name: 'cli' });
  const port = Number(new URL(cli.url).port);
  const held: net.Socket[] = [];
  try {
    for (let i = 0; i < 1100; i++) held.push(await halfRequest(port));
    const started = Date.now();
    const r = await attempt(cli.url, { headers: { Authorization: `Bearer ${TOKEN}` }, handshakeTimeout: 10_000 });
    const took = Date.now() - started;
    assert.equal(r.kind, 'open', `the token holder was locked out: ${JSON.stringify(r.kind === 'open' ? {} : r)} after ${took} ms`);
    if (r.kind === 'open') r.ws.close();
  } finally {
    for (const s of held) s.destroy();
    t.dispose();
  }
});

test('attack: a half-sent request is cut after the header timeout (10 s), not held for Node\'s 60–90 s', async () => {
  ensureBuilt();
  const cli = await startServerProcess(process.execPath, [cliPath, '--listen', 'ws://127.0.0.1:0'], { name: 'cli' });
  const s = await halfRequest(Number(new URL(cli.url).port));
  s.resume(); // read the server's 408, or 'close' waits for the unread answer
  const started = Date.now();
  const closedAfter = await new Promise<number>((resolve) => {
    s.on('close', () => resolve(Date.now() - started));
    setTimeout(() => resolve(-1), 40_000).unref(); // beyond any bound this test accepts
  });
  s.destroy();
  assert.ok(closedAfter >= 0 && closedAfter < 25_000, `the half-sent request was held ${closedAfter < 0 ? 'over 40 s' : `${closedAfter} ms`}`);
});
