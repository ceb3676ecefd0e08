// networkProxyTransparentTcp, side by side with the reference 0.171 (0.169 does not have it: it
// must not advertise it, so Codex never sends the field there). Both servers run in a network
// namespace of the test's own (test/support/netns.ts), where 203.0.113.7 is a local address
// serving an origin: the only way an allowed, non-loopback destination can be reached without
// leaving this machine. The sandboxed command ignores the proxy variables and connects straight
// to addresses and names; what it gets, and every policy decision, must be the reference's.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { managedSandbox, specialEntry } from '../../src/protocol/codex-sandbox';
import os from 'node:os';
import { after, before, test } from 'node:test';
import { createNetNamespace, type NetNamespace } from '../support/netns';
import { commandOf, ourServer, referenceOrSkip, referenceServerOf, referenceVersions, type ServerCommand } from '../support/reference';
import { waitFor } from '../support/wait';
import { exchange, initialized, runToClose, type StdioRun } from '../support/wire';

const NEWEST = referenceVersions().find((v) => v === '0.171.0') ?? referenceVersions().at(-1)!;
const ORIGIN = '203.0.113.7';
let ns: NetNamespace;
let originPort = 0;
let originProc: ReturnType<typeof spawn>;

before(async () => {
  ns = await createNetNamespace({ lifetimeSec: 600 });
  const r = spawnSync(ns.enter[0], [...ns.enter.slice(1), 'ip', 'addr', 'add', `${ORIGIN}/32`, 'dev', 'lo'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const src = `require('http').createServer((q, s) => s.end('origin ' + q.url + '\\n')).listen(0, '${ORIGIN}', function () { console.log(this.address().port); });`;
  originProc = spawn(ns.enter[0], [...ns.enter.slice(1), process.execPath, '-e', src], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  originProc.stdout!.on('data', (d) => (out += d));
  await waitFor(() => /^\d+\n/.test(out), { what: 'the origin in the namespace' });
  originPort = Number(out.trim());
});
after(() => {
  originProc?.kill('SIGKILL');
  ns?.destroy();
});

/** Runs `script` in a transparent-TCP sandbox on `server` (inside the namespace); its output and decisions. */
async function transparentRun(server: ServerCommand, script: string): Promise<{ capabilities: Record<string, unknown> } & StdioRun> {
  const cwd = new URL(`file://${os.tmpdir()}`).href;
  const proxy = {
    enabled: true, enableSocks5: true, transparentTcp: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full',
    domains: { [ORIGIN]: 'allow', 'allowed.test': 'allow', 'denied.test': 'deny' }, allowLocalBinding: false,
  };
  const r = await runToClose([...ns.enter, commandOf(server), ...server.args('stdio')], {
    processId: 'p1', argv: ['/bin/bash', '-c', `exec 2>&1\n${script}`], cwd, env: { PATH: '/usr/bin:/bin' }, tty: false,
    sandbox: managedSandbox({ entries: [specialEntry('root', 'read')], cwd, network: 'enabled' }),
    enforceManagedNetwork: true, managedNetwork: null, networkProxy: { proxy },
  }, { env: server.env(), extra: [{ id: 10, method: 'environment/info', params: null }], timeoutMs: 60_000, what: server.name });
  return { ...r, capabilities: r.replies.get(10)?.result?.capabilities ?? {} };
}

// A reset shows either in bash's connect (when it reaches the child before bash is woken from
// connect) or in cat: both are one outcome, RESET, whichever the load makes it.
const get = (host: string, port: number, p: string) =>
  `echo "== ${host}${p}"; o=$(timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${port} && printf "GET ${p} HTTP/1.0\\r\\n\\r\\n" >&3 && cat <&3 | tail -1' 2>&1); ` +
  `case "$o" in *"reset by peer"*) echo RESET;; *"Connection refused"*) echo REFUSED;; *) echo "$o";; esac`;

test(`transparent TCP against the reference ${NEWEST}: the same sandbox routing, resolver answers, connections and decisions`, async (t) => {
  if (!referenceOrSkip(NEWEST, t)) throw new Error(`the reference ${NEWEST} is needed for this comparison`);
  const script = [
    'echo "== resolv"; cat /etc/resolv.conf',
    'echo "== names"; getent ahostsv4 x.test | head -1; getent ahostsv4 y.test | head -1',
    get(ORIGIN, originPort, '/literal'),
    get('203.0.113.8', originPort, '/documentation'),
    get('allowed.test', originPort, '/name'),
    get('denied.test', originPort, '/denied'),
    get('127.0.0.1', originPort, '/loopback'),
    'echo "== route"; cat /proc/net/route | awk \'NR>1 {print $1, $2}\'',
  ].join('\n');
  const [ref, ours] = [await transparentRun(referenceServerOf(NEWEST), script), await transparentRun(ourServer, script)];
  assert.equal(ref.capabilities.networkProxyTransparentTcp, true);
  assert.equal(ours.capabilities.networkProxyTransparentTcp, true);
  assert.deepEqual(ours.start.result, ref.start.result);
  const norm = (s: string) => s.replaceAll(String(originPort), 'PORT');
  assert.equal(norm(ours.out), norm(ref.out));
  // The comparison is worth something only if the reference did carry the allowed connection.
  assert.match(ref.out, /== 203\.0\.113\.7\/literal\norigin \/literal\n/);
  assert.equal((ref.out.match(/^RESET$/gm) ?? []).length, 3, ref.out);
  assert.match(ref.out, /^nameserver 127\.0\.0\.53$/m);
  const fields = (d: any) => [d.protocol, d.decision, d.source, d.reason, d.host, d.port === originPort ? 'PORT' : d.port, d.scope, d.policyOverride, /^127\.0\.0\.1:\d+$/.test(d.client)];
  assert.deepEqual(ours.decisions.map(fields), ref.decisions.map(fields));
  assert.equal(ref.decisions.length, 4);
});

test('the pinned reference does not advertise transparent TCP (Codex sends the field only where it is advertised); ours and the newest do', async (t) => {
  const pinned = referenceVersions()[0];
  if (!referenceOrSkip(pinned, t)) throw new Error(`the reference ${pinned} is needed`);
  const caps = async (server: ServerCommand) =>
    (await exchange(server, initialized([{ id: 1, method: 'environment/info', params: null }]))).get(1)!.result!.capabilities as Record<string, unknown>;
  assert.notEqual((await caps(referenceServerOf(pinned))).networkProxyTransparentTcp, true);
  assert.equal((await caps(ourServer)).networkProxyTransparentTcp, true);
});
