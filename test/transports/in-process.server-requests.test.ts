// The in-process channel answers the engine's requests to its client (network/policyRequest from
// a managed proxy) through its request handler, as a link's client would: a real engine in this
// process, a sandboxed command behind the proxy, the handler's answers obeyed; without a handler
// the question is denied, and a channel that closes aborts the handler's question.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../src/protocol/codex-sandbox';
import { setNetworkResolver } from '../../src/server/network/resolve';
import { ExecServer } from '../../src/server/exec-server';
import { InProcessChannel } from '../../src/transports/in-process';
import { ENV, uri } from '../support/server';
import { removeTempDir, tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';

let server: ExecServer;
let dir: string;
let W: string;
let origin: http.Server;
let originPort: number;

before(async () => {
  server = new ExecServer();
  dir = tempDir('es-inproc-ask-');
  W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
  origin = http.createServer((req, res) => res.end(`origin ${req.url}\n`));
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  originPort = (origin.address() as net.AddressInfo).port;
  // A test name only: `runsc` leads to this machine's loopback (no real lookup).
  setNetworkResolver(async (host) => (host === 'runsc' ? [{ address: '127.0.0.1', family: 4 }] : []));
});
after(async () => {
  setNetworkResolver(undefined);
  await server.shutdown();
  await new Promise((r) => origin.close(r));
  removeTempDir(dir);
});

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: true, domains: { localhost: 'allow' } };
const via = (requestLine: string, file: string) =>
  `{ exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:} && printf '${requestLine}\\r\\n\\r\\n' >&3 && timeout 60 cat <&3; echo; echo ==END; } >>'${path.join(W, file)}' 2>&1`;

async function open(): Promise<{ ch: InProcessChannel; closed: Set<string> }> {
  const ch = new InProcessChannel(server);
  const closed = new Set<string>();
  ch.onNotification((n) => {
    if (n.method === 'process/closed') closed.add((n.params as { processId: string }).processId);
  });
  await ch.request('initialize', { clientName: 'in-process-ask' });
  ch.notify('initialized', {});
  return { ch, closed };
}

let n = 0;
async function run(ch: InProcessChannel, script: string): Promise<string> {
  const id = `ip${++n}`;
  const r = await ch.request('process/start', {
    processId: id, argv: ['/bin/bash', '-c', script], cwd: uri(W), env: ENV, tty: false,
    sandbox: managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network: 'enabled' }),
    enforceManagedNetwork: true, networkProxy: { proxy: PROXY, policyDecisionTimeoutMs: 30_000 },
  });
  assert.deepEqual(r, { processId: id, sandboxType: 'linuxSeccomp' });
  return id;
}
const read = (file: string) => (fs.existsSync(path.join(W, file)) ? fs.readFileSync(path.join(W, file), 'utf8') : '');

test('the handler gets the question (a copy) and its allow / deny are obeyed', async () => {
  const { ch, closed } = await open();
  const asked: unknown[] = [];
  const answers = [{ decision: { type: 'allow' } }, { decision: { type: 'deny', reason: 'user_denied' } }];
  ch.setRequestHandler(async (method, params) => {
    asked.push({ method, params });
    // A copy: what the handler does to it is not the engine's business.
    (params as { request: { host: string } }).request.host = 'changed-by-handler';
    return answers.shift();
  });
  const id = await run(ch, [via(`GET http://runsc:${originPort}/one HTTP/1.1`, 'a.txt'), via(`GET http://runsc:${originPort}/two HTTP/1.1`, 'a.txt')].join('\n'));
  await waitFor(() => closed.has(id), { timeout: 60_000, what: `${id} closed` });
  assert.deepEqual(asked[0], { method: 'network/policyRequest', params: { processId: id, request: { protocol: 'http', host: 'changed-by-handler', port: originPort } } });
  assert.equal(asked.length, 2);
  const [one, two] = read('a.txt').split('==END');
  assert.match(one, /HTTP\/1\.1 200 OK[\s\S]*origin \/one/);
  assert.match(two, /403 Forbidden[\s\S]*user_denied/);
  ch.close();
});

test('no handler: the question is refused (-32601) and the connection denied', async () => {
  const { ch, closed } = await open();
  const id = await run(ch, via(`GET http://runsc:${originPort}/none HTTP/1.1`, 'b.txt'));
  await waitFor(() => closed.has(id), { timeout: 60_000, what: `${id} closed` });
  assert.match(read('b.txt'), /403 Forbidden[\s\S]*not_allowed/);
  ch.close();
});

test('the channel closing aborts the handler\'s question', async () => {
  const { ch } = await open();
  let signal: AbortSignal | undefined;
  ch.setRequestHandler((_m, _p, s) => {
    signal = s;
    return new Promise(() => {}); // never answers
  });
  await run(ch, `${via(`GET http://runsc:${originPort}/hang HTTP/1.1`, 'c.txt')}`);
  await waitFor(() => signal, { timeout: 30_000, what: 'the question' });
  assert.equal(signal!.aborted, false);
  ch.close();
  assert.equal(signal!.aborted, true);
});
