// Attacks on the executor-local managed proxy (networkProxyLaunch, docs/security.md "Managed network"), with the real
// bubblewrap, the real relay inside the sandbox's network namespace and real loopback listeners.
// The sandboxed command is the attacker: it ignores proxy variables, connects straight to host
// ports, to another process's proxy, to local and private addresses, asks for denied hosts,
// tries SOCKS5 UDP, floods the proxy with connections, and tries a host unix socket. Each of
// these failed on the code before this proxy existed (networkProxy was refused, so nothing here
// ran); the last test's control (an allowed host is reachable) shows the tests can pass at all.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { setNetworkResolver } from '../../../src/server/network/resolve';
import { runScript, serverWithTmpDir, startParams, uri, type Client } from '../../support/server';

let c: Client;
let close: () => Promise<void>;
let dir: string;
let W: string;
let origin: http.Server;
let originPort: number;
/** Requests the origin served, by path. */
const served: string[] = [];
let raw: net.Server;
let rawPort: number;
let rawReached = 0;

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
  W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
  origin = http.createServer((req, res) => {
    served.push(req.url ?? '');
    res.setHeader('x-seen-proxy-auth', String(req.headers['proxy-authorization'] ?? 'none'));
    res.end(`origin ${req.method} ${req.url}\n`);
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  originPort = (origin.address() as net.AddressInfo).port;
  raw = net.createServer((s) => {
    rawReached++;
    s.end('banner\n');
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
  rawPort = (raw.address() as net.AddressInfo).port;
});
after(async () => {
  setNetworkResolver(undefined);
  await close();
  await new Promise((r) => origin.close(r));
  await new Promise((r) => raw.close(r));
});

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: false };
function launch(domains: Record<string, string>, more: Record<string, unknown> = {}) {
  return { proxy: { ...PROXY, domains, ...more }, auditMetadata: { conversationId: 'conv-1', model: 'mock-model' }, environmentId: 'remote1', executionId: 'exec-1' };
}
const sandbox = (network: 'enabled' | 'restricted' = 'enabled') => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network });

let n = 0;
async function run(script: string, networkProxy: object, extra: Record<string, unknown> = {}): Promise<{ id: string; out: string; exitCode: number; decisions: any[] }> {
  const id = `np${++n}`;
  const r = await runScript(c, id, script, { cwd: uri(W), sandbox: sandbox(), enforceManagedNetwork: true, networkProxy, ...extra });
  assert.deepEqual(r.start, { processId: id, sandboxType: 'linuxSeccomp' });
  return { id, out: r.out, exitCode: r.exitCode, decisions: r.decisions };
}

/** bash: one raw HTTP exchange with the proxy at $HTTP_PROXY (no curl needed). */
const viaHttpProxy = (requestLine: string, headers = '') =>
  `exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:} || exit 9; printf '${requestLine}\\r\\n${headers}\\r\\n' >&3; timeout 5 cat <&3`;

test('the child gets the reference\'s proxy variables, pointing at its own loopback; only 0, 1, 2 are open', async () => {
  const r = await run('env | grep -E "PROXY|proxy|CODEX_NETWORK|NODE_USE_ENV_PROXY|ELECTRON_GET|NODE_CHANNEL" | sort; ls /proc/self/fd', launch({ localhost: 'allow' }));
  const env = Object.fromEntries(r.out.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  const httpUrl = env.HTTP_PROXY;
  assert.match(httpUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.match(env.ALL_PROXY, /^socks5h:\/\/127\.0\.0\.1:\d+$/);
  for (const k of ['http_proxy', 'HTTPS_PROXY', 'https_proxy', 'WS_PROXY', 'WSS_PROXY', 'PIP_PROXY', 'NPM_CONFIG_PROXY', 'npm_config_https_proxy', 'YARN_HTTP_PROXY', 'DOCKER_HTTPS_PROXY', 'BUNDLE_HTTP_PROXY']) assert.equal(env[k], httpUrl, k);
  for (const k of ['all_proxy', 'FTP_PROXY', 'ftp_proxy']) assert.equal(env[k], env.ALL_PROXY, k);
  for (const k of ['NO_PROXY', 'no_proxy', 'BUNDLE_NO_PROXY', 'NPM_CONFIG_NOPROXY', 'npm_config_noproxy']) assert.equal(env[k], '', k);
  assert.equal(env.NODE_USE_ENV_PROXY, '1');
  assert.equal(env.ELECTRON_GET_USE_PROXY, 'true');
  assert.equal(env.CODEX_NETWORK_PROXY_ACTIVE, '1');
  assert.equal(env.CODEX_NETWORK_ALLOW_LOCAL_BINDING, '0');
  // Node's channel variables stay with the relay: a Node program run as the command would
  // otherwise look for a channel at fd 4.
  assert.ok(!Object.keys(env).some((k) => k.startsWith('NODE_CHANNEL')), 'no NODE_CHANNEL_* in the command\'s environment');
  // The relay's descriptor never reaches the command.
  assert.deepEqual(r.out.trim().split('\n').filter((l) => /^\d+$/.test(l)).map(Number).filter((fd) => fd > 3), []);
});

test('allowed host: plain HTTP, CONNECT and SOCKS5 reach the loopback origin; Proxy-Authorization is not forwarded; one decision each', async () => {
  const socks = `exec 4<>/dev/tcp/127.0.0.1/\${ALL_PROXY##*:}; printf '\\x05\\x01\\x00' >&4; head -c 2 <&4 | od -An -tx1; printf '\\x05\\x01\\x00\\x03\\x09localhost\\x${(originPort >> 8).toString(16).padStart(2, '0')}\\x${(originPort & 255).toString(16).padStart(2, '0')}' >&4; head -c 10 <&4 | od -An -tx1; printf 'GET /socks HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' >&4; timeout 5 cat <&4`;
  const script = [
    'echo ==HTTP', viaHttpProxy(`GET http://localhost:${originPort}/plain HTTP/1.1`, 'Proxy-Authorization: Basic eDp5\\r\\n'),
    'echo ==CONNECT', `exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:}; printf 'CONNECT localhost:${originPort} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\nGET /tunnel HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' >&3; timeout 5 cat <&3`,
    'echo ==SOCKS', socks,
  ].join('\n');
  const r = await run(script, launch({ localhost: 'allow' }));
  assert.match(r.out, /==HTTP\nHTTP\/1\.1 200 OK[\s\S]*x-seen-proxy-auth: none[\s\S]*origin GET \/plain/);
  assert.match(r.out, /==CONNECT\nHTTP\/1\.1 200 OK\r\ndate: [^\r]+\r\n\r\nHTTP\/1\.1 200 OK[\s\S]*origin GET \/tunnel/);
  assert.match(r.out, /==SOCKS\n 05 00\n 05 00 00 01 00 00 00 00 00 00\nHTTP\/1\.1 200 OK[\s\S]*origin GET \/socks/);
  assert.deepEqual(r.decisions.map((d) => [d.protocol, d.decision, d.source, d.reason, d.host, d.port, d.method]), [
    ['http', 'allow', 'baseline_policy', 'allow', 'localhost', originPort, 'GET'],
    ['https_connect', 'allow', 'baseline_policy', 'allow', 'localhost', originPort, 'CONNECT'],
    ['socks5_tcp', 'allow', 'baseline_policy', 'allow', 'localhost', originPort, undefined],
  ]);
  for (const d of r.decisions) {
    assert.deepEqual(Object.keys(d).sort(), [...['processId', 'timestamp', 'scope', 'decision', 'source', 'reason', 'protocol', 'host', 'port', 'client', 'policyOverride'], ...(d.method ? ['method'] : [])].sort());
    assert.equal(d.scope, 'domain');
    assert.match(d.client, /^127\.0\.0\.1:\d+$/);
    assert.equal(d.policyOverride, false);
  }
});

test('attack: a program that ignores the proxy variables and connects straight to a host port gets nowhere', async () => {
  const before = rawReached;
  const r = await run(`exec 5<>/dev/tcp/127.0.0.1/${rawPort} && head -1 <&5 && echo REACHED; echo rc=$?`, launch({ localhost: 'allow' }));
  assert.doesNotMatch(r.out, /REACHED|banner/);
  assert.match(r.out, /Connection refused/);
  assert.equal(rawReached, before);
});

test('attack: blocked hosts get the reference\'s 403s and the listener is never reached (denied, not allowed, local literal, private, link-local, CONNECT to a denied host, SOCKS5)', async () => {
  const before = rawReached;
  const script = [
    'echo ==DENIED', viaHttpProxy(`GET http://vm:${rawPort}/ HTTP/1.1`),
    'echo; echo ==NOTALLOWED', viaHttpProxy(`GET http://runsc:${rawPort}/ HTTP/1.1`),
    'echo; echo ==LITERAL', viaHttpProxy(`GET http://127.0.0.1:${rawPort}/ HTTP/1.1`),
    'echo; echo ==LINKLOCAL', viaHttpProxy('GET http://169.254.169.254/latest/meta-data/ HTTP/1.1'),
    'echo; echo ==PRIVATE', viaHttpProxy('CONNECT 10.0.0.1:443 HTTP/1.1'),
    'echo; echo ==CONNECTDENIED', viaHttpProxy(`CONNECT vm:${rawPort} HTTP/1.1`),
    'echo; echo ==SOCKSDENIED', `exec 4<>/dev/tcp/127.0.0.1/\${ALL_PROXY##*:}; printf '\\x05\\x01\\x00' >&4; head -c 2 <&4 >/dev/null; printf '\\x05\\x01\\x00\\x01\\x7f\\x00\\x00\\x01\\x${(rawPort >> 8).toString(16).padStart(2, '0')}\\x${(rawPort & 255).toString(16).padStart(2, '0')}' >&4; head -c 10 <&4 | od -An -tx1`,
  ].join('\n');
  const r = await run(script, launch({ localhost: 'allow', vm: 'deny', '*.example.com': 'allow' }));
  const body = (host: string, port: number, reason: string, message: string) =>
    JSON.stringify({ status: 'blocked', host, reason, decision: 'deny', source: 'baseline_policy', protocol: 'http', port, message });
  const denied = body('vm', rawPort, 'denied', 'Domain denied by the sandbox policy.');
  assert.ok(r.out.includes(`==DENIED\nHTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\nx-proxy-error: blocked-by-denylist\r\ncontent-length: ${denied.length}\r\ndate: `), r.out);
  assert.ok(r.out.includes(denied));
  assert.ok(r.out.includes(body('runsc', rawPort, 'not_allowed', 'Domain not in allowlist.')));
  assert.ok(r.out.includes(body('127.0.0.1', rawPort, 'not_allowed_local', 'Sandbox policy blocks local/private network addresses.')));
  assert.ok(r.out.includes(body('169.254.169.254', 80, 'not_allowed_local', 'Sandbox policy blocks local/private network addresses.')));
  assert.match(r.out, /==PRIVATE\nHTTP\/1\.1 403 Forbidden\r\ncontent-type: text\/plain\r\nx-proxy-error: blocked-by-allowlist\r\ncontent-length: 54\r\ndate: [^\r]+\r\n\r\nSandbox policy blocks local\/private network addresses\./);
  assert.match(r.out, /==CONNECTDENIED\nHTTP\/1\.1 403 Forbidden\r\ncontent-type: text\/plain\r\nx-proxy-error: blocked-by-denylist\r\ncontent-length: 36\r\ndate: [^\r]+\r\n\r\nDomain denied by the sandbox policy\./);
  assert.match(r.out, /==SOCKSDENIED\n 05 02 00 01 00 00 00 00 00 00/);
  assert.equal(rawReached, before, 'a blocked request reached the listener');
  assert.deepEqual(r.decisions.map((d) => `${d.protocol} ${d.host} ${d.decision} ${d.reason}`), [
    'http vm deny denied', 'http runsc deny not_allowed', 'http 127.0.0.1 deny not_allowed_local', 'http 169.254.169.254 deny not_allowed_local',
    'https_connect 10.0.0.1 deny not_allowed_local', 'https_connect vm deny denied', 'socks5_tcp 127.0.0.1 deny not_allowed_local',
  ]);
});

test('attack: an allow-listed NAME that leads to this machine is refused (not_allowed_local), whatever the pattern', async () => {
  const r = await run([viaHttpProxy(`GET http://runsc:${originPort}/named HTTP/1.1`), viaHttpProxy(`GET http://localhost:${originPort}/star HTTP/1.1`)].join('; echo; '), launch({ runsc: 'allow', '*': 'allow' }));
  assert.deepEqual(r.decisions.map((d) => `${d.host} ${d.reason}`), ['runsc not_allowed_local', 'localhost not_allowed_local']);
  assert.ok(!served.includes('/named') && !served.includes('/star'));
});

test('attack: a name re-pointed between the check and the connect reaches only the address that was judged', async () => {
  // Two listeners on the same port: 127.0.0.1 (what the name leads to when judged) and
  // 127.0.0.2 (where it leads on any later lookup). allowLocalBinding lets a local name through.
  const second = net.createServer((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nREPOINTD'));
  await new Promise<void>((r) => second.listen(originPort, '127.0.0.2', r));
  let lookups = 0;
  setNetworkResolver(async (host) => {
    if (host !== 'rebind.test') return [{ address: '198.51.100.1', family: 4 }];
    return [{ address: lookups++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
  });
  try {
    const r = await run(viaHttpProxy(`GET http://rebind.test:${originPort}/judged HTTP/1.1`), launch({ 'rebind.test': 'allow' }, { allowLocalBinding: true }));
    assert.match(r.out, /origin GET \/judged/);
    assert.doesNotMatch(r.out, /REPOINTD/);
    assert.equal(lookups, 1, 'the name was looked up again after the check');
  } finally {
    setNetworkResolver(undefined);
    await new Promise((r) => second.close(r));
  }
});

test('attack: another process\'s proxy port is unreachable from a sandbox and from the host (no host listener)', async () => {
  const id = `np-victim`;
  await c.call('process/start', startParams(id, ['/bin/bash', '-c', 'echo PORTS ${HTTP_PROXY##*:} ${ALL_PROXY##*:}; exec sleep 30'], { cwd: uri(W), sandbox: sandbox(), enforceManagedNetwork: true, networkProxy: launch({ localhost: 'allow' }) }));
  await c.sink.waitFor(() => /PORTS \d+ \d+/.test(c.sink.outputText(id)), 20_000, 'victim ports');
  const [, hp, sp] = /PORTS (\d+) (\d+)/.exec(c.sink.outputText(id))!;
  try {
    const r = await run(`for p in ${hp} ${sp}; do (exec 5<>/dev/tcp/127.0.0.1/$p) && echo REACHED $p; done; echo done`, launch({ localhost: 'allow' }));
    assert.doesNotMatch(r.out, /REACHED/);
    for (const p of [hp, sp]) {
      const err = await new Promise<string>((resolve) => {
        const s = net.connect(Number(p), '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve('connected');
        });
        s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      });
      assert.equal(err, 'ECONNREFUSED', `host 127.0.0.1:${p}`);
    }
  } finally {
    await c.call('process/terminate', { processId: id });
  }
});

test('attack: SOCKS5 UDP ASSOCIATE and BIND are refused (reply 7); a host unix socket is unreachable (socket(AF_UNIX) refused)', async () => {
  const sock = path.join(dir, 'host.sock');
  let unixReached = 0;
  const u = net.createServer((s) => {
    unixReached++;
    s.end();
  });
  await new Promise<void>((r) => u.listen(sock, r));
  try {
    const socks = (cmd: number) =>
      `exec 4<>/dev/tcp/127.0.0.1/\${ALL_PROXY##*:}; printf '\\x05\\x01\\x00' >&4; head -c 2 <&4 >/dev/null; printf '\\x05\\x0${cmd}\\x00\\x01\\x7f\\x00\\x00\\x01\\x00\\x35' >&4; head -c 10 <&4 | od -An -tx1`;
    const node = `ELECTRON_RUN_AS_NODE=1 '${process.execPath}' -e "require('net').connect('${sock}').on('connect',()=>console.log('UNIX REACHED')).on('error',e=>console.log('unix',e.code))"`;
    const r = await run(['echo ==UDP', socks(3), 'echo ==BIND', socks(2), 'echo ==UNIX', node].join('\n'), launch({ localhost: 'allow' }));
    assert.match(r.out, /==UDP\n 05 07 00 01 00 00 00 00 00 00/);
    assert.match(r.out, /==BIND\n 05 07 00 01 00 00 00 00 00 00/);
    assert.match(r.out, /unix EPERM/);
    assert.equal(unixReached, 0);
  } finally {
    await new Promise((r) => u.close(r));
  }
});

test('attack: a flood of connections to the proxy is bounded (128 open at once, the rest reset at once) and the proxy serves again once they close', async () => {
  const script = [
    `p=\${HTTP_PROXY##*:}; fds=(); for i in $(seq 1 300); do exec {fd}<>/dev/tcp/127.0.0.1/$p && fds+=($fd); done; echo opened \${#fds[@]}`,
    // In a subshell: under load the reset can reach bash while it is still in connect (its exec fails).
    `echo ==DURING; (${viaHttpProxy(`GET http://localhost:${originPort}/during-flood HTTP/1.1`)})`,
    'for fd in "${fds[@]}"; do exec {fd}>&-; done',
    // The executor sees the 300 closes asynchronously: a connection made before it has counted
    // them may still meet the bound, so the request is retried (up to 5 s) until it is served.
    `echo; echo ==AFTER; for t in $(seq 1 50); do out=$(${viaHttpProxy(`GET http://localhost:${originPort}/after-flood HTTP/1.1`)} 2>&1); case $out in "HTTP/1.1 200"*) break;; esac; sleep 0.1; done; printf '%s\n' "$out"`,
  ].join('\n');
  const r = await run(script, launch({ localhost: 'allow' }));
  assert.match(r.out, /opened 300/); // the kernel queues them; the executor holds at most 128
  // The connection past the bound is reset (RST): nothing answered on it.
  assert.match(r.out, /==DURING\n(?:[^\n]*Connection reset by peer\n)*\n==AFTER\nHTTP\/1\.1 200 OK[\s\S]*origin GET \/after-flood/);
  assert.ok(!served.includes('/during-flood'));
});

test('limited mode: GET passes, POST → method_not_allowed (two decisions), CONNECT → mitm_required, SOCKS → method_not_allowed', async () => {
  const script = [
    'echo ==GET', viaHttpProxy(`GET http://localhost:${originPort}/limited HTTP/1.1`),
    'echo; echo ==POST', viaHttpProxy(`POST http://localhost:${originPort}/post HTTP/1.1`, 'Content-Length: 0\\r\\n'),
    'echo; echo ==CONNECT', viaHttpProxy(`CONNECT localhost:${originPort} HTTP/1.1`),
  ].join('\n');
  const r = await run(script, launch({ localhost: 'allow' }, { mode: 'limited' }));
  assert.match(r.out, /==GET\nHTTP\/1\.1 200 OK/);
  assert.match(r.out, /==POST\nHTTP\/1\.1 403 Forbidden\r\ncontent-type: application\/json\r\nx-proxy-error: blocked-by-method-policy/);
  assert.match(r.out, /==CONNECT\nHTTP\/1\.1 403 Forbidden\r\ncontent-type: text\/plain\r\nx-proxy-error: blocked-by-mitm-required[\s\S]*MITM required for limited HTTPS\./);
  assert.deepEqual(r.decisions.map((d) => `${d.method} ${d.decision} ${d.source} ${d.reason}`), [
    'GET allow baseline_policy allow', 'POST allow baseline_policy allow', 'POST deny mode_guard method_not_allowed',
    'CONNECT allow baseline_policy allow', 'CONNECT deny mode_guard mitm_required',
  ]);
  assert.ok(!served.includes('/post'));
});

test('attack: an allowed origin never gets a request addressed to another virtual host (Host naming another host or port, or two Host headers → 400, as the reference; nothing judged or sent)', async () => {
  const script = [
    'echo ==OTHER', viaHttpProxy(`GET http://localhost:${originPort}/vhost-other HTTP/1.1`, `Host: internal.example:${originPort}\\r\\n`),
    'echo; echo ==PORT', viaHttpProxy(`GET http://localhost:${originPort}/vhost-port HTTP/1.1`, 'Host: localhost:1\\r\\n'),
    'echo; echo ==TWO', viaHttpProxy(`GET http://localhost:${originPort}/vhost-two HTTP/1.1`, `Host: localhost:${originPort}\\r\\nHost: internal.example\\r\\n`),
    'echo; echo ==SAME', viaHttpProxy(`GET http://localhost:${originPort}/vhost-same HTTP/1.1`, `Host: LOCALHOST:${originPort}\\r\\n`),
  ].join('\n');
  const r = await run(script, launch({ localhost: 'allow' }));
  assert.match(r.out, /==OTHER\nHTTP\/1\.1 400 Bad Request\r\ncontent-type: text\/plain\r\ncontent-length: 41\r\ndate: [^\r]+\r\n\r\nHost header does not match request target/);
  assert.match(r.out, /==PORT\nHTTP\/1\.1 400 Bad Request[\s\S]*Host header does not match request target/);
  assert.match(r.out, /==TWO\nHTTP\/1\.1 400 Bad Request[\s\S]*multiple Host headers/);
  assert.match(r.out, /==SAME\nHTTP\/1\.1 200 OK[\s\S]*origin GET \/vhost-same/);
  for (const u of ['/vhost-other', '/vhost-port', '/vhost-two']) assert.ok(!served.includes(u), u);
  assert.equal(r.decisions.length, 1, 'a refused request is not judged');
});
