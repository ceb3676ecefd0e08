// Transparent TCP (networkProxyTransparentTcp, src/server/network/transparent.ts) with the real
// bubblewrap, the real helper (native/transparent-tcp.c) and real loopback listeners. The
// sandboxed command ignores every proxy variable and connects wherever it likes; what it reaches
// is decided by the same policy as a SOCKS5 CONNECT. Each attack below failed on the code before
// (a start asking for transparentTcp was refused, so nothing ran); the first test is the control
// that shows an allowed name is reachable at all.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { setNetworkResolver } from '../../../src/server/network/resolve';
import { runScript, serverWithTmpDir, uri, type Client } from '../../support/server';

let c: Client;
let close: () => Promise<void>;
let dir: string;
let W: string;
let origin: http.Server;
let originPort: number;
const served: string[] = [];
let raw: net.Server;
let rawPort: number;
let rawReached = 0;
/** This machine's own non-loopback IPv4 address (a host address the child might aim at). */
let hostAddress: string;

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
  W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
  origin = http.createServer((req, res) => {
    served.push(req.url ?? '');
    res.end(`origin ${req.url}\n`);
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  originPort = (origin.address() as net.AddressInfo).port;
  raw = net.createServer((s) => {
    rawReached++;
    s.end('banner\n');
  });
  await new Promise<void>((r) => raw.listen(0, '0.0.0.0', r));
  rawPort = (raw.address() as net.AddressInfo).port;
  hostAddress = Object.values(os.networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal)?.address ?? '10.255.255.1';
  // Names stay on this machine: allowed.test is served by the loopback origin.
  setNetworkResolver(async (host) => (host === 'allowed.test' ? [{ address: '127.0.0.1', family: 4 }] : []));
});
after(async () => {
  setNetworkResolver(undefined);
  await close();
  await new Promise((r) => origin.close(r));
  await new Promise((r) => raw.close(r));
});

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full' };
// allowLocalBinding: allowed.test resolves (here) to the loopback origin.
const launch = (transparentTcp = true, allowLocalBinding = true) => ({ proxy: { ...PROXY, transparentTcp, allowLocalBinding, domains: { 'allowed.test': 'allow', 'denied.test': 'deny' } } });
const sandbox = () => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network: 'enabled' });

let n = 0;
async function run(script: string, transparentTcp = true, allowLocalBinding = true): Promise<{ out: string; exitCode: number; decisions: any[] }> {
  const id = `tt${++n}`;
  const env = { PATH: '/usr/bin:/bin' };
  const r = await runScript(c, id, `unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy\n${script}`, { cwd: uri(W), env, sandbox: sandbox(), enforceManagedNetwork: true, networkProxy: launch(transparentTcp, allowLocalBinding) });
  assert.deepEqual(r.start, { processId: id, sandboxType: 'linuxSeccomp' });
  return r;
}

/** bash: one HTTP/1.0 GET straight to host:port, no proxy; prints the answer or the error, then rc=N. */
const get = (host: string, port: number | string, p: string) => `timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${port} && printf "GET ${p} HTTP/1.0\\r\\n\\r\\n" >&3 && cat <&3'; echo "rc=$?"`;

test('control: a program that ignores the proxy variables reaches an allowed name; its lookup is the sandbox resolver\'s fake address; one socks5_tcp decision', async () => {
  const r = await run(['cat /etc/resolv.conf', 'getent ahostsv4 allowed.test | head -1', get('allowed.test', originPort, '/transparent')].join('\n'));
  assert.match(r.out, /^nameserver 127\.0\.0\.53$/m);
  assert.match(r.out, /^198\.18\.0\.1\s+STREAM allowed\.test$/m);
  assert.match(r.out, /origin \/transparent\nrc=0/);
  assert.ok(served.includes('/transparent'));
  assert.deepEqual(r.decisions.map((d) => [d.protocol, d.decision, d.reason, d.host, d.port]), [['socks5_tcp', 'allow', 'allow', 'allowed.test', originPort]]);
  assert.match(r.decisions[0].client, /^127\.0\.0\.1:\d+$/);
});

test('attack: a denied or unlisted name, and a public literal, are judged and reset; nothing is reached', async () => {
  const before = served.length;
  const r = await run([get('denied.test', originPort, '/denied'), get('other.test', originPort, '/other'), get('1.1.1.1', 80, '/public')].join('\n'));
  const seen = `output:\n${r.out}\ndecisions: ${JSON.stringify(r.decisions)}`;
  assert.equal(served.length, before, seen);
  // Each connection is reset: while bash still connects, or once it reads (the message differs).
  const answers = r.out.split(/^rc=\d+$/m).slice(0, 3);
  assert.equal(answers.length, 3, r.out);
  for (const a of answers) assert.match(a, /Connection reset by peer/, r.out);
  assert.doesNotMatch(r.out, /rc=0/);
  assert.deepEqual(r.decisions.map((d) => [d.protocol, d.decision, d.reason, d.host]), [
    ['socks5_tcp', 'deny', 'denied', 'denied.test'],
    ['socks5_tcp', 'deny', 'not_allowed', 'other.test'],
    ['socks5_tcp', 'deny', 'not_allowed', '1.1.1.1'],
  ], seen);
});

test('attack: the host\'s own address and a link-local one are refused as local; the host\'s loopback is the sandbox\'s own (refused, nothing judged)', async () => {
  const before = rawReached;
  const r = await run([get(hostAddress, rawPort, '/host'), get('169.254.169.254', 80, '/metadata'), get('127.0.0.1', rawPort, '/loop')].join('\n'), true, false);
  assert.equal(rawReached, before, 'the host listener was reached');
  assert.match(r.out, /Connection refused/);
  assert.deepEqual(r.decisions.map((d) => [d.protocol, d.decision, d.reason, d.host]), [
    ['socks5_tcp', 'deny', 'not_allowed_local', hostAddress],
    ['socks5_tcp', 'deny', 'not_allowed_local', '169.254.169.254'],
  ]);
});

test('attack: the transparent listener itself (its port read from /proc/net/tcp), by loopback, by a mapped address or the TUN\'s, and a fake address never handed out: reset, nothing judged', async () => {
  const before = served.length;
  const findPort = `h=$(awk 'NR>1 && $4=="0A" && $2 ~ /^00000000:/ {split($2,a,":"); print a[2]}' /proc/net/tcp | head -1); export L=$((16#$h)); echo "listener=$L"`;
  const r = await run([findPort, get('127.0.0.1', '$L', '/self'), get('100.66.1.2', '$L', '/mapped'), get('192.0.2.1', '$L', '/tun'), get('198.18.200.1', originPort, '/unissued')].join('\n'));
  assert.match(r.out, /^listener=\d+$/m, 'the listener was found');
  assert.equal(served.length, before);
  assert.deepEqual(r.decisions, []);
  assert.doesNotMatch(r.out, /rc=0/);
});

test('attack: UDP and ICMP go nowhere (only TCP is carried): a datagram to a host UDP socket never arrives', async () => {
  const udp = dgram.createSocket('udp4');
  let got = 0;
  udp.on('message', () => got++);
  await new Promise<void>((r) => udp.bind(0, '0.0.0.0', r));
  const port = udp.address().port;
  try {
    const r = await run(`for i in 1 2 3; do echo x > /dev/udp/${hostAddress}/${port}; echo x > /dev/udp/127.0.0.1/${port}; done; ping -c1 -W1 ${hostAddress} >/dev/null 2>&1; echo sent`);
    assert.match(r.out, /sent/);
    // A datagram of our own, sent after the process closed, arrives after anything it had sent.
    const marker = new Promise<void>((res) => udp.once('message', () => res()));
    const probe = dgram.createSocket('udp4');
    probe.send('marker', port, '127.0.0.1', () => probe.close());
    await marker;
    assert.equal(got, 1, 'only the marker arrived');
  } finally {
    udp.close();
  }
});

test('without transparentTcp the same program gets nowhere (no route, no resolver), and no helper outlives a process', async () => {
  const before = served.length;
  const r = await run([get('1.1.1.1', 80, '/x'), 'getent ahostsv4 allowed.test || echo unresolved'].join('\n'), false);
  assert.match(r.out, /Network is unreachable/);
  assert.match(r.out, /unresolved/);
  assert.equal(served.length, before);
  const helpers = spawnSync('pgrep', ['-f', 'transparent-tcp-linux'], { encoding: 'utf8' }).stdout.trim();
  assert.equal(helpers, '', 'a transparent-TCP helper is still running');
});
