// The managed proxy's decision callback (network/policyRequest, REFERENCE §1.7) side by side:
// our CLI and every reference version, each over its websocket, the same sandboxed command
// asking for `runsc` (which /etc/hosts maps to 127.0.0.1) through the proxy five times, the
// client answering allow / deny / ask / garbage / an error; then a question left unanswered.
// What must be equal: the question frame, the child's answers (status, x-proxy-error, body),
// the network/policyDecision notifications, and the time an unanswered question takes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../src/protocol/codex-sandbox';
import { RawRpcClient } from '../support/raw-rpc';
import { removeTempDir, tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';
import { ourServer, referenceServers, startWsServer, type ServerCommand } from '../support/reference';

let origin: http.Server;
let port: number;
let dir: string;

before(async () => {
  origin = http.createServer((req, res) => res.end(`origin ${req.url}\n`));
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  port = (origin.address() as net.AddressInfo).port;
  // Not below /tmp: the reference's sandbox gives the command a private /tmp.
  dir = tempDir('es-np-interop-', { parent: path.join(process.cwd(), 'out') });
});
after(async () => {
  await new Promise((r) => origin.close(r));
  removeTempDir(dir);
});

const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: true, allowUpstreamProxy: true, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: true, domains: { localhost: 'allow' } };
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/', LANG: 'C' };

interface Outcome {
  questions: unknown[];
  answers: string[];
  decisions: string[];
  unansweredMs: number;
}

/** The child's answer, without what differs run to run (date, ports). */
const normal = (s: string) => s.replace(/date: [^\r]+\r\n/gi, '').replace(/\r/g, '').trim();

async function outcome(server: ServerCommand, tag: string): Promise<Outcome> {
  const W = path.join(dir, tag);
  fs.mkdirSync(W, { recursive: true });
  const srv = await startWsServer(server);
  const c = await RawRpcClient.open(srv.url);
  try {
    const sandbox = managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: `file://${W}`, network: 'enabled' });
    const via = (i: number) => `exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:}; printf 'GET http://runsc:${port}/q${i} HTTP/1.1\\r\\nHost: runsc:${port}\\r\\nConnection: close\\r\\n\\r\\n' >&3; timeout 30 cat <&3; echo; echo ==END`;
    const answers: unknown[] = [
      { result: { decision: { type: 'allow' } } },
      { result: { decision: { type: 'deny', reason: 'user_denied' } } },
      { result: { decision: { type: 'ask', reason: 'needs_review' } } },
      { result: { decision: 'allow' } },
      { error: { code: -32000, message: 'no' } },
    ];
    c.onRequest = (msg) => {
      const a = answers.shift();
      if (a) c.send({ id: msg.id, ...(a as object) });
    };
    const start = (id: string, script: string, timeoutMs: number) =>
      c.call('process/start', { processId: id, argv: ['/bin/bash', '-c', script], cwd: `file://${W}`, env: ENV, tty: false, sandbox, enforceManagedNetwork: true, networkProxy: { proxy: PROXY, policyDecisionTimeoutMs: timeoutMs } });
    await start('p1', [1, 2, 3, 4, 5].map(via).join('\n'), 30_000);
    await c.closedProcess('p1');
    const out = Buffer.concat(c.frames.filter((f) => f.method === 'process/output' && f.params.processId === 'p1').map((f) => Buffer.from(f.params.chunk, 'base64'))).toString();
    // The unanswered one: from the question to the 403.
    await start('p2', via(6), 1000);
    await waitFor(() => c.questions().length === 6, { what: 'the sixth question', timeout: 30_000 });
    const asked = Date.now();
    await c.closedProcess('p2');
    const unansweredMs = Date.now() - asked;
    return {
      questions: c.questions().map((q) => ({ ...q, params: { ...q.params, request: { ...q.params.request, port: q.params.request.port === port ? 'PORT' : q.params.request.port } } })),
      answers: out.split('==END').slice(0, 5).map(normal),
      decisions: [...c.decisions('p1'), ...c.decisions('p2')].map((d) => `${d.processId} ${d.protocol} ${d.host} ${d.method} ${d.decision} ${d.source} ${d.reason} ${d.policyOverride}`),
      unansweredMs,
    };
  } finally {
    await c.close();
    await srv.stop();
  }
}

test('network/policyRequest: our CLI answers, asks and times out as every reference version does', async () => {
  const ours = await outcome(ourServer, 'ours');
  for (const ref of referenceServers()) {
    const theirs = await outcome(ref, `ref-${ref.version}`);
    assert.deepEqual(ours.questions, theirs.questions, `questions vs ${ref.name}`);
    assert.deepEqual(ours.answers, theirs.answers, `the child's answers vs ${ref.name}`);
    assert.deepEqual(ours.decisions, theirs.decisions, `decisions vs ${ref.name}`);
    // Both deny an unanswered question after policyDecisionTimeoutMs plus about 5 s.
    assert.ok(Math.abs(ours.unansweredMs - theirs.unansweredMs) < 2500, `unanswered: ours ${ours.unansweredMs} ms, ${ref.name} ${theirs.unansweredMs} ms`);
    console.log(`unanswered (policyDecisionTimeoutMs 1000): ours ${ours.unansweredMs} ms, ${ref.name} ${theirs.unansweredMs} ms`);
  }
  assert.equal(ours.questions.length, 6);
  assert.match(ours.answers[0], /^HTTP\/1\.1 200 OK[\s\S]*origin \/q1$/);
});
