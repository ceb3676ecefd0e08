// Network questions on the agent endpoint (docs/security.md, "Managed network"): a sandboxed agent command behind the
// managed proxy reaches for a host its launch does not cover; the engine asks its client
// (network/policyRequest) and the endpoint's gate, not the agent, answers: the user's
// allowlist (execServer.network.allowedDomains), an "Allow for Session" host, or the user
// through a question naming the host, the port and the command. Attacks: the agent's own
// allow entries, answering the question itself, a flood of questions, no answer. Real
// endpoint, real engine, real bubblewrap with the relay in the sandbox's network namespace;
// test names map to 127.0.0.1 in the test's resolver (no real lookup).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { setNetworkResolver } from '../../../src/server/network/resolve';
import { waitFor } from '../../support/wait';
import { RawAgent, removeDir, startParams, tmpDir, uri, withAgent, type FixtureOptions } from '../../support/agent-attack';
import { startEchoOrigin, type EchoOrigin } from '../../support/test-origins';

let ws: string;
let origin: EchoOrigin;
let port: number;
const seen: string[] = [];

before(async () => {
  ws = tmpDir('agent-net-ws-');
  origin = await startEchoOrigin(seen);
  port = origin.port;
  setNetworkResolver(async (host) => (host.endsWith('.test') ? [{ address: '127.0.0.1', family: 4 }] : []));
});
after(async () => {
  setNetworkResolver(undefined);
  await origin.close();
  removeDir(ws);
});

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full' };
/** Codex's launch for a network-allowlist profile; allowLocalBinding lets the test's names (→ 127.0.0.1) through once allowed. */
const launch = (domains: Record<string, string>, more: Record<string, unknown> = {}) => ({ proxy: { ...PROXY, allowLocalBinding: true, domains, ...more } });
const sandbox = () => managedSandbox({ entries: workspaceWriteEntries(), cwd: uri(ws), network: 'enabled' });

/** bash: one request through $HTTP_PROXY per host, each answer's status line and body. */
const fetches = (hosts: string[]) =>
  hosts.map((h) => `exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:}; printf 'GET http://${h}:${port}/${h} HTTP/1.1\\r\\nHost: ${h}:${port}\\r\\nConnection: close\\r\\n\\r\\n' >&3; echo "== ${h}"; timeout 20 cat <&3; echo`).join('\n');

let n = 0;
async function run(a: RawAgent, script: string, networkProxy: object): Promise<{ id: string; out: string; error?: string }> {
  const id = `net${++n}`;
  const r = await a.send('process/start', startParams(id, ['/bin/bash', '-c', script], ws, { sandbox: sandbox(), enforceManagedNetwork: true, networkProxy }));
  if (r.error) return { id, out: '', error: r.error.message };
  await waitFor(() => a.notifications.some((x) => x.method === 'process/closed' && (x.params as { processId: string }).processId === id), { what: `${id} closed`, timeout: 60_000 });
  const out = Buffer.concat(a.notifications.filter((x) => x.method === 'process/output' && (x.params as { processId: string }).processId === id).map((x) => Buffer.from((x.params as { chunk: string }).chunk, 'base64'))).toString();
  return { id, out };
}
/** The answer the child got for `host`. */
const answerFor = (out: string, host: string) => out.split('== ').find((p) => p.startsWith(`${host}\n`)) ?? '';
const isNetwork = (q: { message: string }) => / wants to reach /.test(q.message);

/** Starts are allowed (they ask: allowLocalBinding), network questions answered by `net`. */
const opts = (net: (message: string) => string | undefined | 'wait', more: Partial<FixtureOptions> = {}): FixtureOptions => ({
  policy: 'askOutsideWorkspace',
  roots: [ws],
  answer: (q) => (/ wants to reach /.test(q.message) ? net(q.message) : 'Allow'),
  ...more,
});

describe('agent endpoint: network questions', () => {
  it('a host the launch does not cover is asked, naming host, port and command; Allow reaches it, Deny gets the 403; the agent is never asked', async () => {
    await withAgent(opts((m) => (m.includes('wants to reach pypi.test:') ? 'Allow' : 'Deny')), async (f, a) => {
      const r = await run(a, `: fetch-them\n${fetches(['pypi.test', 'evil.test'])}`, launch({}));
      assert.equal(r.error, undefined);
      assert.match(answerFor(r.out, 'pypi.test'), /HTTP\/1\.1 200 OK[\s\S]*origin \/pypi\.test/);
      assert.match(answerFor(r.out, 'evil.test'), /403 Forbidden[\s\S]*"reason":"user_denied","decision":"deny","source":"decider"/);
      assert.ok(seen.includes('/pypi.test') && !seen.includes('/evil.test'));
      const qs = f.questions.filter(isNetwork);
      assert.equal(qs.length, 2);
      assert.match(qs[0].message, new RegExp(`^Exec Server: agent connection #\\d+ \\(127\\.0\\.0\\.1:\\d+\\), client "attack-test": \`/bin/bash -c .*fetch-them.*\` wants to reach pypi\\.test:${port} \\(HTTP\\)$`));
      assert.match(qs[0].detail, new RegExp(`Host: pypi\\.test\\nPort: ${port}\\nProtocol: http\\nCommand: /bin/bash -c`));
      assert.deepEqual(a.serverRequests, [], 'the agent was sent a question about its own command');
    });
  });

  it('attack: the agent\'s own allow entries ("*", the host itself) and its own short timeout do not let its command out unasked', async () => {
    await withAgent(opts(() => 'Deny'), async (f, a) => {
      const r = await run(a, fetches(['evil2.test']), { ...launch({ '*': 'allow', 'evil2.test': 'allow' }), policyDecisionTimeoutMs: 1 });
      assert.match(answerFor(r.out, 'evil2.test'), /403 Forbidden[\s\S]*user_denied/);
      assert.equal(f.questions.filter(isNetwork).length, 1);
      assert.ok(!seen.includes('/evil2.test'));
      const start = f.questions.find((q) => !isNetwork(q))!;
      assert.match(start.detail, /Network: only through the managed proxy; allowed without a question: none .*asked instead of allowed as the agent asked: '\*', evil2\.test;/);
    });
  });

  it('execServer.network.allowedDomains answers without asking (exact names and **. patterns); Allow for Session covers the host\'s later connections', async () => {
    await withAgent(opts(() => 'Allow for Session', { allowedDomains: ['pypi.test', '**.corp.test'] }), async (f, a) => {
      const r = await run(a, fetches(['pypi.test', 'git.corp.test', 'once.test', 'once.test']), launch({}));
      for (const h of ['pypi.test', 'git.corp.test']) assert.match(answerFor(r.out, h), /200 OK/, h);
      assert.equal(r.out.split('== once.test').filter((p) => /^\n?HTTP\/1\.1 200 OK/.test(p)).length, 2);
      assert.deepEqual(f.questions.filter(isNetwork).map((q) => /reach (\S+):/.exec(q.message)![1]), ['once.test']);
    });
  });

  it('no answer in time: denied (timed_out), the UI is told "no answer within N s"; more than 8 open questions: denied at once, never queued', async () => {
    await withAgent(opts(() => 'wait', { timeoutMs: 2000 }), async (f, a) => {
      const hosts = Array.from({ length: 12 }, (_, i) => `h${i}.test`);
      // All twelve at once: background fetches, then wait for them.
      const script = hosts.map((h) => `( ${fetches([h])} ) > out-${h} 2>&1 &`).join('\n') + `\nwait; cat ${hosts.map((h) => `out-${h}`).join(' ')}`;
      const t0 = Date.now();
      const r = await run(a, `cd ${ws}\n${script}`, launch({}));
      const took = Date.now() - t0;
      const reasons = hosts.map((h) => /"reason":"(\w+)"/.exec(answerFor(r.out, h))?.[1]);
      assert.equal(reasons.filter((x) => x === 'timed_out').length, 8, reasons.join(' '));
      assert.equal(reasons.filter((x) => x === 'too_many_questions').length, 4, reasons.join(' '));
      assert.equal(f.questions.filter(isNetwork).length, 8);
      assert.deepEqual(f.timedOut, Array(8).fill('network 2'));
      assert.ok(took < 30_000, `took ${took} ms`);
    });
  });

  it('a launch that keeps local addresses refused runs without a question under askOutsideWorkspace; its other hosts are still asked', async () => {
    await withAgent(opts(() => 'Deny'), async (f, a) => {
      const r = await run(a, fetches(['other.test']), launch({}, { allowLocalBinding: false }));
      assert.equal(r.error, undefined);
      assert.equal(f.questions.filter((q) => !isNetwork(q)).length, 0, 'the start asked');
      assert.equal(f.questions.filter(isNetwork).length, 1);
      assert.match(answerFor(r.out, 'other.test'), /403 Forbidden/);
    });
  });
});
