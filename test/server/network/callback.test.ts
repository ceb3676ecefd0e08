// The managed proxy's decision callback (network/policyRequest, REFERENCE §1.7), on the wire: a
// real websocket server, a raw JSON-RPC client, real bubblewrap and the relay inside the
// sandbox's own network namespace. The sandboxed command asks for a domain the launch's
// policy does not list; the server asks its client and obeys the answer. Every way of not
// getting a usable answer is a deny: garbage, a JSON-RPC error, no answer in time, the client
// gone mid-question (then at once, not after the timeout, and never asked of nobody).
// On the code before the callback existed every one of these tests failed: no question was
// ever sent (the unlisted domain got the baseline's 403 at once).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { DECISION_MARGIN_MS } from '../../../src/server/network/callback';
import { setNetworkResolver } from '../../../src/server/network/resolve';
import { ExecServer } from '../../../src/server/exec-server';
import { serveConnection, type ServedConnection } from '../../../src/transports/serve';
import { listenWebSocket, type WebSocketListener } from '../../../src/transports/websocket-server';
import { removeTempDir, tempDir } from '../../support/tmp';
import { RawRpcClient } from '../../support/raw-rpc';
import { waitFor } from '../../support/wait';
import { ENV, uri } from '../../support/server';

let server: ExecServer;
let listener: WebSocketListener;
const served: ServedConnection[] = [];
let dir: string;
let W: string;
let origin: http.Server;
let originPort: number;
const seen: string[] = [];

before(async () => {
  server = new ExecServer();
  listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => void served.push(serveConnection(server, t)) });
  dir = tempDir('es-np-callback-');
  W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
  origin = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    res.end(`origin ${req.url}\n`);
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  originPort = (origin.address() as net.AddressInfo).port;
  // Test names only: `runsc` and `pypi.test` lead to this machine's loopback (no real lookup).
  setNetworkResolver(async (host) => (host === 'runsc' || host === 'pypi.test' ? [{ address: '127.0.0.1', family: 4 }] : []));
});
after(async () => {
  setNetworkResolver(undefined);
  await listener.close();
  await server.shutdown();
  await new Promise((r) => origin.close(r));
  removeTempDir(dir);
});

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: true, domains: { localhost: 'allow' } };
const launch = (policyDecisionTimeoutMs: number) => ({ proxy: PROXY, policyDecisionTimeoutMs });
const sandbox = () => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network: 'enabled' });

/** bash: one raw HTTP exchange with the proxy at $HTTP_PROXY, its answer appended to `file` (readable after a disconnect too). */
const via = (requestLine: string, file: string) =>
  `{ exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:} && printf '${requestLine}\\r\\n\\r\\n' >&3 && timeout 60 cat <&3; echo; echo ==END; } >>'${path.join(W, file)}' 2>&1`;

let n = 0;
async function start(c: RawRpcClient, script: string, timeoutMs: number): Promise<string> {
  const id = `cb${++n}`;
  const r = await c.call('process/start', { processId: id, argv: ['/bin/bash', '-c', script], cwd: uri(W), env: ENV, tty: false, sandbox: sandbox(), enforceManagedNetwork: true, networkProxy: launch(timeoutMs) });
  assert.deepEqual(r, { processId: id, sandboxType: 'linuxSeccomp' });
  return id;
}
const read = (file: string) => (fs.existsSync(path.join(W, file)) ? fs.readFileSync(path.join(W, file), 'utf8') : '');

test('the question on the wire is the reference\'s (id 1 on the server\'s side, {processId, request}); allow / deny / ask / garbage / an error answer each do what the reference does, and every connection asks again', async () => {
  const c = await RawRpcClient.open(listener.url);
  const answers: unknown[] = [
    { result: { decision: { type: 'allow' } } },
    { result: { decision: { type: 'deny', reason: 'user_denied' } } },
    { result: { decision: { type: 'ask', reason: 'needs_review' } } },
    { result: { decision: 'allow' } },
    { error: { code: -32000, message: 'no' } },
  ];
  c.onRequest = (msg) => c.send({ id: msg.id, ...(answers.shift() as object) });
  const out = 'answers.txt';
  const script = [1, 2, 3, 4, 5].map((i) => via(`GET http://runsc:${originPort}/q${i} HTTP/1.1`, out)).join('\n');
  const id = await start(c, script, 30_000);
  await c.closedProcess(id);
  const qs = c.questions();
  assert.equal(qs.length, 5, 'one question per connection, none cached');
  assert.deepEqual(qs[0], { id: 1, method: 'network/policyRequest', params: { processId: id, request: { protocol: 'http', host: 'runsc', port: originPort } } });
  assert.deepEqual(qs.map((q) => q.id), [1, 2, 3, 4, 5]);
  const parts = read(out).split('==END');
  assert.match(parts[0], /HTTP\/1\.1 200 OK[\s\S]*origin \/q1/);
  const body = (reason: string, decision: string, message: string) => JSON.stringify({ status: 'blocked', host: 'runsc', reason, decision, source: 'decider', protocol: 'http', port: originPort, message });
  assert.match(parts[1], /x-proxy-error: blocked-by-policy/);
  assert.ok(parts[1].includes(body('user_denied', 'deny', 'Request blocked by network policy.')), parts[1]);
  assert.ok(parts[2].includes(body('needs_review', 'ask', 'Request blocked by network policy.')), parts[2]);
  for (const p of [parts[3], parts[4]]) {
    assert.match(p, /x-proxy-error: blocked-by-allowlist/);
    assert.ok(p.includes(body('not_allowed', 'deny', 'Domain not in allowlist.')), p);
  }
  assert.deepEqual(seen.filter((u) => /^\/q\d$/.test(u)), ['/q1']);
  assert.deepEqual(c.decisions(id).map((d) => `${d.decision} ${d.source} ${d.reason} ${d.policyOverride}`), [
    'allow decider not_allowed true', 'deny decider user_denied false', 'ask decider needs_review false', 'deny decider not_allowed false', 'deny decider not_allowed false',
  ]);
  await c.close();
});

test('no answer: denied (not_allowed, decider) policyDecisionTimeoutMs + the reference\'s ~5 s after asking, and the late answer changes nothing', async () => {
  const c = await RawRpcClient.open(listener.url);
  const out = 'timeout.txt';
  const id = await start(c, via(`GET http://runsc:${originPort}/late HTTP/1.1`, out), 1000);
  const q = await waitFor(() => c.questions()[0], { what: 'the question', timeout: 30_000 });
  const asked = Date.now();
  await waitFor(() => read(out).includes('==END'), { what: 'the 403', timeout: 30_000 });
  const waited = Date.now() - asked;
  assert.ok(waited >= 1000 + DECISION_MARGIN_MS - 200, `denied after ${waited} ms`);
  assert.match(read(out), /403 Forbidden[\s\S]*"reason":"not_allowed","decision":"deny","source":"decider"/);
  c.send({ id: q.id, result: { decision: { type: 'allow' } } }); // too late: ignored
  await c.closedProcess(id);
  assert.ok(!seen.includes('/late'));
  assert.equal(served.at(-1)!.rpc.pendingCount, 0, 'the server still holds the question');
  assert.deepEqual(await c.call('environment/info', {}).then(() => 'alive'), 'alive');
  await c.close();
});

test('attack: the client disconnects mid-question: the waiting connection is denied at once (not after the 120 s timeout), and later ones are denied without asking anybody', async () => {
  const c = await RawRpcClient.open(listener.url);
  const out = 'disconnect.txt';
  const script = `${via(`GET http://runsc:${originPort}/first HTTP/1.1`, out)}\nwhile [ ! -e '${path.join(W, 'go')}' ]; do sleep 0.05; done\n${via(`CONNECT pypi.test:${originPort} HTTP/1.1`, out)}`;
  const id = await start(c, script, 120_000);
  await waitFor(() => c.questions().length === 1, { what: 'the question', timeout: 30_000 });
  const t0 = Date.now();
  await c.close();
  await waitFor(() => read(out).includes('==END'), { what: 'the first 403', timeout: 30_000 });
  const first = Date.now() - t0;
  fs.writeFileSync(path.join(W, 'go'), '');
  await waitFor(() => read(out).split('==END').length === 3, { what: 'the second answer', timeout: 30_000 });
  const [a, b] = read(out).split('==END');
  assert.match(a, /403 Forbidden[\s\S]*"reason":"not_allowed","decision":"deny","source":"decider"/);
  assert.match(b, /403 Forbidden\r\ncontent-type: text\/plain\r\nx-proxy-error: blocked-by-allowlist[\s\S]*Domain not in allowlist\./);
  assert.ok(first < 20_000, `denied ${first} ms after the disconnect`);
  assert.ok(!seen.includes('/first'));
  assert.equal(c.questions().length, 1);
  // The detached session's process is still there; a new connection can end it.
  const s = served.at(-1)!;
  assert.equal(s.rpc.pendingCount, 0);
  void id;
});
