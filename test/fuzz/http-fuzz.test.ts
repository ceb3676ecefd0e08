// Raw-TCP fuzzing of the HTTP/upgrade layer of the built CLI (auth on): random bytes,
// mangled request lines, broken websocket handshakes, oversized and odd headers, random
// Authorization values. Asserts: no socket is ever upgraded without the token, the server
// never crashes, and afterwards /readyz and an authenticated websocket still work.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import fc from 'fast-check';
import { attempt, ensureBuilt, RawRpc, startCli, stopAll } from '../support/cli-servers';
import { tempDir } from '../support/security';

const RUNS = 600;
const TOKEN = 'http-fuzz-token-q1w2e3r4t5';
const tmp = tempDir();
before(() => ensureBuilt());
after(async () => {
  await stopAll();
  tmp.dispose();
});

const crlf = '\r\n';
const headerName = fc.stringMatching(/^[A-Za-z-]{1,20}$/);
const headerValue = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 60 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, '')) },
);

/** Mostly the valid value (so most requests reach the auth check), sometimes a broken one. */
const mostly = <T,>(valid: T, ...broken: T[]) => fc.oneof({ weight: 6, arbitrary: fc.constant(valid) }, { weight: 1, arbitrary: fc.constantFrom(...broken) });

const requestArb: fc.Arbitrary<Buffer> = fc.oneof(
  // random bytes
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 512 }).map((u) => Buffer.from(u)) },
  // a websocket handshake with random/missing pieces and a random Authorization
  { weight: 4, arbitrary: fc.record({
    method: mostly('GET', 'POST', 'get', 'CONNECT', 'G\u0000T', ''),
    target: mostly('/', '/readyz', '/?q=1', '*', '//x', '/%00', 'http://evil/', '/' + 'a'.repeat(9000)),
    version: mostly('HTTP/1.1', 'HTTP/1.0', 'HTTP/2', 'HTTP/9.9', ''),
    upgrade: mostly('websocket', 'WebSocket', 'h2c', ''),
    key: mostly('dGhlIHNhbXBsZSBub25jZQ==', '', 'short', '!!!!'),
    wsVersion: mostly('13', '8', '', 'x'),
    auth: fc.oneof(fc.constant(undefined), headerValue, headerValue.map((v) => `Bearer ${v}`), fc.constant(`Bearer ${TOKEN}x`), fc.constant(`Basic ${TOKEN}`)),
    extra: fc.oneof({ weight: 3, arbitrary: fc.constant([] as Array<[string, string]>) }, { weight: 1, arbitrary: fc.array(fc.tuple(headerName, headerValue), { maxLength: 4 }) }),
    huge: mostly(false, true),
  }).map((r) => {
    const lines = [`${r.method} ${r.target} ${r.version}`, 'Host: 127.0.0.1', 'Connection: Upgrade', `Upgrade: ${r.upgrade}`, `Sec-WebSocket-Key: ${r.key}`, `Sec-WebSocket-Version: ${r.wsVersion}`];
    if (r.auth !== undefined) lines.push(`Authorization: ${r.auth}`);
    for (const [k, v] of r.extra) lines.push(`${k}: ${v}`);
    if (r.huge) lines.push(`X-Big: ${'b'.repeat(70_000)}`);
    return Buffer.from(lines.join(crlf) + crlf + crlf, 'latin1');
  }) },
);

/** Sends raw bytes; resolves with what came back before close (or a 3 s idle cut). */
function rawExchange(port: number, data: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    const done = () => {
      clearTimeout(timer);
      s.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, 3_000);
    s.on('connect', () => s.write(data, () => s.end()));
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('error', done);
    s.on('close', done);
  });
}

test(`http fuzz: ${RUNS} malformed/random upgrade requests never get a websocket without the token`, async () => {
  const cli = await startCli(['--listen', 'ws://127.0.0.1:0', '--ws-auth', 'capability-token', '--ws-token-file', tmp.file('token', TOKEN)]);
  const port = Number(new URL(cli.url).port);
  const samples = fc.sample(requestArb, { numRuns: RUNS, seed: 99 });
  const statuses = new Map<string, number>();
  for (let i = 0; i < samples.length; i += 20) {
    const replies = await Promise.all(samples.slice(i, i + 20).map((d) => rawExchange(port, d)));
    for (const r of replies) {
      assert.doesNotMatch(r, /^HTTP\/1\.1 101/, 'upgraded without a valid token');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(r)?.[1] ?? 'none';
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  }
  assert.ok((statuses.get('401') ?? 0) > RUNS / 10, `no 401 seen: ${JSON.stringify([...statuses])}`);
  assert.equal(cli.child.exitCode, null, `server died: ${cli.stderr().slice(-1000)}`);
  // Still healthy: readyz and an authenticated websocket.
  assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  const a = await attempt(cli.url, { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(a.kind, 'open');
  if (a.kind === 'open') {
    const rpc = new RawRpc(a.ws);
    await rpc.init();
    assert.deepEqual((await rpc.call('environment/status', null)).result, { status: 'ready' });
    a.ws.close();
  }
  await cli.stop();
  assert.doesNotMatch(cli.stderr(), /fatal|TypeError|RangeError/);
  assert.ok(!cli.stderr().includes(TOKEN), 'token in logs');
  console.log(`http fuzz: statuses ${[...statuses].map(([s, n]) => `${s}:${n}`).join(' ')}`);
});
