// Attacks on the managed network (docs/security.md, "Managed network"): a process/start that asks for the managed
// network policy the engine cannot enforce must never run with the network open. The
// "attacker" is a sandboxed command that tries to reach a listener on the host's 127.0.0.1
// (a stand-in for any local service or the internet) while the client asked for
// `enforceManagedNetwork` (and, here, for no proxy, or for one we do not bridge).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { overrideTransparentSupport } from '../../../src/server/network/transparent';
import { rejectsWith, serverWithTmpDir, startParams, uri, type Client } from '../../support/server';

let c: Client;
let close: () => Promise<void>;
let W: string;
let listener: net.Server;
let port: number;
/** Connections the host listener accepted: any one of them is a bypass. */
let reached = 0;

before(async () => {
  let dir: string;
  ({ c, dir, close } = await serverWithTmpDir());
  W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
  listener = net.createServer((s) => {
    reached++;
    s.end('banner\n');
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  port = (listener.address() as net.AddressInfo).port;
});
after(async () => {
  await close();
  await new Promise((r) => listener.close(r));
});

const sandbox = (network: 'enabled' | 'restricted') => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network });
/** bash's /dev/tcp: a program that ignores every proxy variable and connects straight to the host port. */
const connectScript = () => `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3 && echo REACHED`;

async function finished(id: string): Promise<{ exitCode: number; sandboxDenied: boolean; out: string }> {
  await c.sink.waitFor(() => c.sink.closed(id), 20_000, `${id} closed`);
  const ex = c.sink.forProcess(id).find((e) => e.method === 'process/exited')!;
  return { exitCode: ex.params.exitCode, sandboxDenied: ex.params.sandboxDenied, out: c.sink.outputText(id) };
}

for (const network of ['enabled', 'restricted'] as const) {
  for (const [label, extra] of [
    ['no managedNetwork', {}],
    ['managedNetwork null', { managedNetwork: null }],
    ['managedNetwork {}', { managedNetwork: {} }],
    ['loopback ports but no proxy variables', { managedNetwork: { loopbackPorts: [0] } }],
  ] as const) {
    test(`attack: enforceManagedNetwork without a proxy (${label}, network ${network}) never reaches a host port; fails closed as the reference (exit 101, sandboxDenied)`, async () => {
      const id = `fc-${network}-${label.replace(/\W+/g, '-')}`;
      const before = reached;
      const e = { ...extra } as Record<string, unknown>;
      if ((e.managedNetwork as { loopbackPorts?: number[] } | undefined)?.loopbackPorts) e.managedNetwork = { loopbackPorts: [port] };
      const r = await c.call('process/start', startParams(id, ['/bin/bash', '-c', connectScript()], { cwd: uri(W), sandbox: sandbox(network), enforceManagedNetwork: true, ...e }));
      assert.deepEqual(r, { processId: id, sandboxType: 'linuxSeccomp' });
      const f = await finished(id);
      assert.doesNotMatch(f.out, /REACHED/);
      assert.equal(reached, before, 'the host listener was reached');
      assert.equal(f.exitCode, 101);
      assert.equal(f.sandboxDenied, true);
      assert.match(f.out, /managed proxy mode requires proxy environment variables/);
    });
  }
}

test('attack: enforceManagedNetwork under a `disabled` sandbox type does not run open either (the reference fails it closed too)', async () => {
  const before = reached;
  const r = await c.call(
    'process/start',
    startParams('fc-disabled', ['/bin/bash', '-c', connectScript()], { cwd: uri(W), sandbox: { permissions: { type: 'disabled' }, cwd: uri(W) }, enforceManagedNetwork: true }),
  );
  assert.equal(r.sandboxType, 'linuxSeccomp');
  const f = await finished('fc-disabled');
  assert.equal(reached, before);
  assert.equal(f.exitCode, 101);
  assert.equal(f.sandboxDenied, true);
});

test('attack: a PTY with enforceManagedNetwork and no proxy fails closed the same way', async () => {
  const before = reached;
  await c.call('process/start', startParams('fc-pty', ['/bin/bash', '-c', connectScript()], { cwd: uri(W), sandbox: sandbox('enabled'), enforceManagedNetwork: true, tty: true }));
  const f = await finished('fc-pty');
  assert.equal(reached, before);
  assert.equal(f.exitCode, 101);
  assert.equal(f.sandboxDenied, true);
});

test('attack: managedNetwork with proxy variables (a client-run proxy to bridge) is refused, not run open or unbridged', async () => {
  const before = reached;
  await rejectsWith(
    c.call(
      'process/start',
      startParams('fc-bridge', ['/bin/bash', '-c', connectScript()], {
        cwd: uri(W),
        sandbox: sandbox('enabled'),
        enforceManagedNetwork: true,
        managedNetwork: { loopbackPorts: [port] },
        env: { PATH: '/usr/bin:/bin', HTTP_PROXY: `http://127.0.0.1:${port}` },
      }),
    ),
    -32600,
    /managedNetwork/,
  );
  assert.equal(reached, before);
  assert.equal(c.sink.forProcess('fc-bridge').length, 0, 'nothing started');
});

test('a managed sandbox with network enabled and no managed-network request keeps full network (as the reference: control for the tests above)', async () => {
  const before = reached;
  await c.call('process/start', startParams('fc-open', ['/bin/bash', '-c', connectScript()], { cwd: uri(W), sandbox: sandbox('enabled') }));
  const f = await finished('fc-open');
  assert.match(f.out, /REACHED/);
  assert.equal(reached, before + 1);
});

test('attack: a networkProxy launch this engine cannot confine (no managed sandbox, a PTY, a credential provider it cannot mask, transparent TCP) is refused (-32600) and nothing starts', async () => {
  const before = reached;
  const proxy = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: false, domains: { localhost: 'allow' } };
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ sandbox: null, networkProxy: { proxy } }, /needs a managed sandbox/],
    [{ sandbox: { permissions: { type: 'disabled' }, cwd: uri(W) }, networkProxy: { proxy } }, /needs a managed sandbox/],
    [{ sandbox: sandbox('enabled'), tty: true, networkProxy: { proxy } }, /PTY/],
    // Masking it cannot do is refused rather than run with the secret unmasked: a pattern it
    // cannot draw a dummy from, a header without the `header` form (the reference ignores such
    // a provider and leaves its secret unmasked).
    [{ sandbox: sandbox('enabled'), networkProxy: { proxy: { ...proxy, credentialMasking: true, credentialProviders: { p: { env: ['T'], patterns: ['(?=a)[a-z][0-9]{8}'], url_prefixes: ['https://x.example/'] } } } } }, /credential provider `p`: pattern uses regex syntax this exec-server cannot draw a dummy from/],
    [{ sandbox: sandbox('enabled'), networkProxy: { proxy: { ...proxy, credentialMasking: true, credentialProviders: { p: { env: ['T'], patterns: ['t[0-9]{8}'], url_prefixes: ['https://x.example/'], header: 'X-Api-Key' } } } } }, /credential provider `p`: credential provider `p` requires a header name exactly when using header authentication; refusing to run with the credential unmasked/],
    // Where the transparent-TCP helper cannot run (not built, no /dev/net/tun).
    [{ sandbox: sandbox('enabled'), networkProxy: { proxy: { ...proxy, transparentTcp: true } } }, /transparent TCP is not supported by this exec-server \(the helper is missing here\)/],
  ];
  overrideTransparentSupport({ ok: false, reason: 'the helper is missing here' });
  try {
    for (const [i, [extra, why]] of cases.entries()) {
      await rejectsWith(c.call('process/start', startParams(`fc-np${i}`, ['/bin/bash', '-c', connectScript()], { cwd: uri(W), enforceManagedNetwork: true, ...extra })), -32600, why);
      assert.equal(c.sink.forProcess(`fc-np${i}`).length, 0);
    }
  } finally {
    overrideTransparentSupport(undefined);
  }
  assert.equal(reached, before);
});
