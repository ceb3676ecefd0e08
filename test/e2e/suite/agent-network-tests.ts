// The network question in the real workbench (docs/security.md, "Managed network"): an agent's sandboxed command behind
// the managed proxy reaches for `runsc` (this machine's /etc/hosts maps it to 127.0.0.1, where
// the test's origin listens); the endpoint's gate asks the user with a notification naming the
// command, the host and the port. Allow reaches the origin; Deny gets the proxy's 403 and the
// origin sees nothing. The question's text forms no link. The same for an agent on a remote
// environment's endpoint (the host's server asks; the relay turns it into the same question), and
// for a command another extension starts on Local through the API (not an agent: the Local
// connection's own answerer asks, src/extension/approval/network-questions.ts).
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as vscode from 'vscode';
import { AgentClient } from './agent-client';
import { agentEndpoint } from './agent-security-tests';
import { answerApproval, setApprovalPolicyForTest } from './approval';
import { LOCAL } from './environment-tests';
import { onTestEnd, test } from './framework';
import { RemoteServer } from './remote-server';
import { assert, freshDir, productApi, uniqueName, waitFor } from './util';

/** process/start of `bash -c script` in `dir`, sandboxed, behind the managed proxy (`networkProxy`). */
function proxiedStart(mark: string, script: string, dir: string, networkProxy: unknown): Record<string, unknown> {
  return {
    processId: mark,
    argv: ['/bin/bash', '-c', script],
    cwd: pathToFileURL(dir).href,
    env: { PATH: '/usr/bin:/bin' },
    tty: false,
    pipeStdin: false,
    arg0: null,
    sandbox: sandbox(dir),
    enforceManagedNetwork: true,
    networkProxy,
  };
}

/** Codex's workspace-write sandbox with the network on (what a network-allowlist profile sends). */
function sandbox(cwd: string): unknown {
  const special = (kind: string, subpath?: string) => ({ type: 'special', value: subpath ? { kind, subpath } : { kind } });
  const entries = [
    { path: special('root'), access: 'read' },
    { path: special('project_roots'), access: 'write' },
    { path: special('slash_tmp'), access: 'write' },
    { path: special('tmpdir'), access: 'write' },
    ...['.git', '.agents', '.codex'].map((s) => ({ path: special('project_roots', s), access: 'read', missing_path_behavior: 'skip' })),
  ];
  return {
    permissions: { type: 'managed', file_system: { type: 'restricted', entries }, network: 'enabled' },
    cwd: pathToFileURL(cwd).href,
    workspaceRoots: [pathToFileURL(cwd).href],
    windowsSandboxLevel: 'disabled',
    windowsSandboxProxySettingsMode: 'reconcile',
    useLegacyLandlock: false,
  };
}

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: true, domains: { localhost: 'allow' } };

export function registerAgentNetworkTests(): void {
  test('agent network question: a sandboxed command reaching for a host its launch does not cover is asked (command, host, port, no link); Allow reaches it, Deny gets a 403', async () => {
    await setApprovalPolicyForTest('askOutsideWorkspace');
    const dir = freshDir('agent-network');
    const { port, seen, close } = await loopbackOrigin();
    onTestEnd(close);
    const { url, token } = await agentEndpoint();
    const c = await AgentClient.connect(url, token);
    try {
      await allowAndDeny(c, dir, port, seen);
    } finally {
      c.terminate();
    }
  }, 150_000);

  test('agent network question on a remote environment\'s endpoint: the host\'s server asks, the relay asks the user the same question; Allow reaches the host, Deny gets a 403', async () => {
    await setApprovalPolicyForTest('alwaysAsk');
    const { port, seen, close } = await loopbackOrigin();
    onTestEnd(close);
    const server = new RemoteServer();
    const wsUrl = await server.start();
    const name = uniqueName('net-env');
    await vscode.commands.executeCommand('execServer.addEnvironment', { name, url: wsUrl, token: server.token });
    onTestEnd(async () => {
      await vscode.commands.executeCommand('execServer.stopAgentEndpoint', { environment: name }).then(undefined, () => undefined);
      await vscode.commands.executeCommand('execServer.removeEnvironment', { environment: name }).then(undefined, () => undefined);
      await server.stop();
    });
    await vscode.commands.executeCommand('execServer.connect', { environment: name });
    const r = await vscode.commands.executeCommand<{ url: string; token: string } | undefined>('execServer.startAgentEndpoint', { environment: name, quiet: true });
    assert(r && /^ws:\/\/127\.0\.0\.1:\d+/.test(r.url), `an endpoint for ${name}: ${JSON.stringify(r)}`);
    const c = await AgentClient.connect(r.url, r.token);
    onTestEnd(() => c.terminate());
    await allowAndDeny(c, freshDir('agent-network-remote'), port, seen);
  }, 150_000);

  test('Local network question, not an agent: a proxied command another extension starts through the API is asked (environment, host, port, no link); Allow reaches it, Deny gets a 403', async () => {
    await setApprovalPolicyForTest('askOutsideWorkspace');
    const { port, seen, close } = await loopbackOrigin();
    onTestEnd(close);
    const client = (await (await productApi()).getClient(LOCAL)) as { request(method: string, params: unknown): Promise<unknown> };
    const dir = freshDir('local-network');
    const run = async (mark: string, answer: 'Allow' | 'Deny') => {
      const out = path.join(dir, `${mark}.out`);
      const script = `{ exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:}; printf 'GET http://runsc:${port}/${mark} HTTP/1.1\\r\\nHost: runsc:${port}\\r\\nConnection: close\\r\\n\\r\\n' >&3; timeout 60 cat <&3; } > ${mark}.tmp 2>&1; mv ${mark}.tmp ${mark}.out`;
      await client.request('process/start', proxiedStart(mark, script, dir, { proxy: PROXY, policyDecisionTimeoutMs: 60_000 }));
      // No start question: the API's client is not gated (trusted extensions); the host is.
      const q = await answerApproval(answer, { contains: [`Local: a command wants to reach runsc:${port}`] });
      assert(q.clicked, `the network question (${q.error})`);
      assert((q.links ?? []).length === 0, `the question has no link: ${JSON.stringify(q.links)}`);
      assert(q.text?.includes('(HTTP)'), `the question names the protocol: ${q.text}`);
      return waitFor(`${mark}'s answer`, () => (existsSync(out) ? readFileSync(out, 'utf8') : undefined), 60_000);
    };
    const allowed = uniqueName('localallow');
    const out1 = await run(allowed, 'Allow');
    assert(/HTTP\/1\.1 200 OK[\s\S]*origin \//.test(out1), `Allow reached the origin: ${out1.slice(0, 300)}`);
    assert(seen.includes(`/${allowed}`), 'the origin saw the allowed request');
    const denied = uniqueName('localdeny');
    const out2 = await run(denied, 'Deny');
    assert(/403 Forbidden[\s\S]*"reason":"user_denied"/.test(out2), `Deny got the 403: ${out2.slice(0, 300)}`);
    assert(!seen.includes(`/${denied}`), 'the origin saw the denied request');
  }, 150_000);
}

/** An HTTP origin on this machine's loopback (`runsc` leads there through /etc/hosts). */
async function loopbackOrigin(): Promise<{ port: number; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const origin: Server = createServer((req, res) => {
    seen.push(req.url ?? '');
    res.end(`origin ${req.url}\n`);
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  return { port: (origin.address() as AddressInfo).port, seen, close: () => new Promise((r) => origin.close(() => r())) };
}

/** An agent's proxied command asks for `runsc`: the start is allowed, then Allow reaches the origin and Deny gets the 403. */
async function allowAndDeny(c: AgentClient, dir: string, port: number, seen: string[]): Promise<void> {
  const run = async (mark: string, answer: 'Allow' | 'Deny') => {
    const script = `: ${mark}\nexec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:}; printf 'GET http://runsc:${port}/${mark} HTTP/1.1\\r\\nHost: runsc:${port}\\r\\nConnection: close\\r\\n\\r\\n' >&3; timeout 60 cat <&3`;
    const started = c.settle('process/start', proxiedStart(mark, script, dir, { proxy: PROXY }));
    // The start itself is asked (its launch lets names lead to local addresses), then the host.
    const start = await answerApproval('Allow', { contains: [mark, 'wants to run'] });
    assert(start.clicked, `the start question (${start.error})`);
    const r = await started;
    assert(r.ok, `process/start: ${r.ok ? '' : r.error.message}`);
    const q = await answerApproval(answer, { contains: [mark, `wants to reach runsc:${port}`] });
    assert(q.clicked, `the network question (${q.error})`);
    assert((q.links ?? []).length === 0, `the question has no link: ${JSON.stringify(q.links)}`);
    assert(q.text?.includes('(HTTP)'), `the question names the protocol: ${q.text}`);
    await c.waitForExit(mark, 60_000);
    return c.notifications
      .filter((n) => n.method === 'process/output' && n.params?.processId === mark)
      .map((n) => Buffer.from(String(n.params.chunk), 'base64').toString())
      .join('');
  };
  const allowed = uniqueName('netallow');
  const out1 = await run(allowed, 'Allow');
  assert(/HTTP\/1\.1 200 OK[\s\S]*origin \//.test(out1), `Allow reached the origin: ${out1.slice(0, 300)}`);
  assert(seen.includes(`/${allowed}`), 'the origin saw the allowed request');
  const denied = uniqueName('netdeny');
  const out2 = await run(denied, 'Deny');
  assert(/403 Forbidden[\s\S]*"reason":"user_denied"/.test(out2), `Deny got the 403: ${out2.slice(0, 300)}`);
  assert(!seen.includes(`/${denied}`), 'the origin saw the denied request');
}
