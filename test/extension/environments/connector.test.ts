// The connector's connections answer the engine's network questions (docs/security.md, "Managed
// network"): a command on an environment the user drives (here Local: the in-process engine),
// started behind the managed proxy by another extension, reaches for a host its launch does not
// cover; the question goes to the user (Allow / Allow for Session / Deny, naming the environment,
// the host and the port), and no answer in time is a deny. Before, the connector gave the client
// no answerer and every such host was refused unseen. Real engine, real bubblewrap with the
// proxy's listeners in the sandbox's namespace; test names map to 127.0.0.1 in the test's resolver.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ExecClient } from '../../../src/client/api';
import { environmentNetworkQuestions, type NetworkQuestionHost, type UserNetworkQuestion } from '../../../src/extension/approval/network-questions';
import { createConnector } from '../../../src/extension/environments/connector';
import { LOCAL_ENVIRONMENT, type EnvironmentConfig } from '../../../src/extension/environments/store';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { ExecServer } from '../../../src/server/exec-server';
import { setNetworkResolver } from '../../../src/server/network/resolve';
import { ENV, uri } from '../../support/server';
import { removeTempDir, tempDir } from '../../support/tmp';
import { waitFor } from '../../support/wait';
import { startEchoOrigin, type EchoOrigin } from '../../support/test-origins';

let server: ExecServer;
let dir: string;
let origin: EchoOrigin;
let port: number;
const seen: string[] = [];

before(async () => {
  server = new ExecServer();
  dir = tempDir('es-connector-net-');
  origin = await startEchoOrigin(seen);
  port = origin.port;
  setNetworkResolver(async (host) => (host.endsWith('.test') ? [{ address: '127.0.0.1', family: 4 }] : []));
});
after(async () => {
  setNetworkResolver(undefined);
  await server.shutdown();
  await origin.close();
  removeTempDir(dir);
});

const LOCAL: EnvironmentConfig = { name: LOCAL_ENVIRONMENT, kind: 'local' };
const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: false, allowUpstreamProxy: false, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: true, domains: { 'covered.test': 'allow' } };

/** A user who answers each question with the next of `answers` (undefined: never answers). */
function user(answers: (string | undefined)[], more: Partial<NetworkQuestionHost> = {}) {
  const asked: UserNetworkQuestion[] = [];
  const timedOut: number[] = [];
  /** The unanswered questions' buttons, to click late. */
  const unanswered: ((choice: string) => void)[] = [];
  const host: NetworkQuestionHost = {
    policy: () => 'askOutsideWorkspace',
    allowedDomains: () => [],
    timeoutMs: () => 25_000,
    ask: (q) => {
      asked.push(q);
      const a = answers.shift();
      return a === undefined ? new Promise((r) => unanswered.push(r)) : Promise.resolve(a);
    },
    timedOut: (q) => timedOut.push(q.id),
    ...more,
  };
  return { host, asked, timedOut, unanswered };
}

let n = 0;
/** Runs bash in a proxied sandbox on `client`: one GET through $HTTP_PROXY per host; the answers, by host. */
async function fetchAll(client: ExecClient, hosts: string[]): Promise<Map<string, string>> {
  const id = `cn${++n}`;
  const W = path.join(dir, id);
  fs.mkdirSync(W);
  const script = hosts
    .map((h) => `{ exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:} && printf 'GET http://${h}:${port}/${id}-${h} HTTP/1.1\\r\\nHost: ${h}:${port}\\r\\nConnection: close\\r\\n\\r\\n' >&3 && timeout 60 cat <&3; echo; echo "==END ${h}"; } >>out.txt 2>&1`)
    .concat('echo ok > done')
    .join('\n');
  await client.request('process/start', {
    processId: id, argv: ['/bin/bash', '-c', script], cwd: uri(W), env: ENV, tty: false, pipeStdin: false, arg0: null,
    sandbox: managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(W), network: 'enabled' }),
    enforceManagedNetwork: true, networkProxy: { proxy: PROXY, policyDecisionTimeoutMs: 60_000 },
  } as never);
  await waitFor(() => fs.existsSync(path.join(W, 'done')), { timeout: 90_000, what: `${id} done` });
  const out = fs.readFileSync(path.join(W, 'out.txt'), 'utf8');
  const by = new Map<string, string>();
  for (const h of hosts) {
    const end = out.indexOf(`==END ${h}\n`);
    const start = out.lastIndexOf('==END', end - 1);
    by.set(h, out.slice(start < 0 ? 0 : start, end));
  }
  return by;
}

describe('Local: a proxied command\'s network question is the user\'s', () => {
  it('Allow reaches the host, Deny does not; the question names the environment, host and port; a covered host is not asked', async () => {
    const u = user(['Allow', 'Deny']);
    const client = await createConnector({ get: () => server }, undefined, [], (env) => environmentNetworkQuestions(env, u.host)).connect(LOCAL, undefined);
    try {
      const r = await fetchAll(client, ['covered.test', 'allowed.test', 'denied.test']);
      assert.match(r.get('covered.test')!, /200 OK[\s\S]*origin/);
      assert.match(r.get('allowed.test')!, /200 OK[\s\S]*origin \/cn\d+-allowed\.test/);
      assert.match(r.get('denied.test')!, /403 Forbidden/);
      assert.ok(!seen.some((s) => s.endsWith('-denied.test')), seen.join(' '));
      assert.deepEqual(u.asked.map((q) => q.message), [
        `Exec Server: Local: a command wants to reach allowed.test:${port} (HTTP)`,
        `Exec Server: Local: a command wants to reach denied.test:${port} (HTTP)`,
      ]);
      assert.equal(u.asked[0].kind, 'network');
      assert.deepEqual(u.asked[0].choices, ['Allow', 'Allow for Session', 'Deny']);
    } finally {
      client.dispose();
    }
  });

  it('Allow for Session answers later connections to that host unasked, on this connection only; the allowlist answers unasked', async () => {
    const u = user(['Allow for Session'], { allowedDomains: () => ['**.listed.test'] });
    const connector = createConnector({ get: () => server }, undefined, [], (env) => environmentNetworkQuestions(env, u.host));
    const client = await connector.connect(LOCAL, undefined);
    try {
      const r = await fetchAll(client, ['again.test', 'again.test', 'a.listed.test']);
      assert.match(r.get('again.test')!, /200 OK/);
      assert.match(r.get('a.listed.test')!, /200 OK/);
      assert.equal(u.asked.length, 1);
      assert.equal(seen.filter((s) => /cn\d+-again\.test$/.test(s)).length, 2);
    } finally {
      client.dispose();
    }
    // A new connection (a reconnect of the environment) has no session hosts: asked again, no answer → denied.
    const v = user([], { timeoutMs: () => 300 });
    const other = await createConnector({ get: () => server }, undefined, [], (env) => environmentNetworkQuestions(env, v.host)).connect(LOCAL, undefined);
    try {
      const r = await fetchAll(other, ['again.test']);
      assert.match(r.get('again.test')!, /403 Forbidden/);
      assert.equal(v.asked.length, 1);
    } finally {
      other.dispose();
    }
  });

  it('no answer in time is a deny (fail closed), and the user is told; a click after that changes nothing', async () => {
    const lateSeen: string[] = [];
    const u = user([], { timeoutMs: () => 500, late: (_q, choice) => lateSeen.push(choice) });
    const client = await createConnector({ get: () => server }, undefined, [], (env) => environmentNetworkQuestions(env, u.host)).connect(LOCAL, undefined);
    try {
      const r = await fetchAll(client, ['slow.test']);
      assert.match(r.get('slow.test')!, /403 Forbidden/);
      assert.ok(!seen.some((s) => s.endsWith('-slow.test')));
      assert.deepEqual(u.timedOut, [u.asked[0].id]);
      u.unanswered[0]('Allow');
      await waitFor(() => lateSeen.length === 1, { what: 'the late click noticed' });
      const again = await fetchAll(client, ['slow.test']);
      assert.match(again.get('slow.test')!, /403 Forbidden/);
    } finally {
      client.dispose();
    }
  });
});
