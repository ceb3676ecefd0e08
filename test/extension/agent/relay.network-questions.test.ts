// A remote environment's managed network proxy asks its client (network/policyRequest) about a
// domain its policy does not cover: through the agent endpoint's relay that is the same question
// to the user as a local engine's. Driven by a scripted host that also attacks: questions about a
// process this agent connection never started there, and requests of other methods, must get a
// refusal without any question shown. Then with this project's real server as the host: the gate
// rewrites the relayed launch as it does a local one (the user's allowlist, the callback on), so
// the agent's own allow entries never reach the host and every other host is the user's question.
import { strict as assert } from 'node:assert';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ChildProcess } from 'node:child_process';
import type { RelayTarget } from '../../../src/extension/agent/relay';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { RpcChannel } from '../../../src/rpc/channel';
import { spawnCommandTransport } from '../../../src/transports/command';
import { cliPath } from '../../support/cli';
import { waitFor } from '../../support/wait';
import { closedOf, endpointFor, outputOf, scriptTarget, start, ws } from './relay-helpers';

// On process/start: four requests to its client, then the answers as the process's output.
const ASKING_HOST = `
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
const answers = {};
let started;
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === undefined && typeof m.id === 'string') {
    answers[m.id] = m.error ? { error: m.error.code } : m.result;
    if (Object.keys(answers).length === 4) {
      send({ method: 'process/output', params: { processId: started, seq: 1, stream: 'stdout', chunk: Buffer.from(JSON.stringify(answers)).toString('base64') } });
      send({ method: 'process/exited', params: { processId: started, seq: 2, exitCode: 0, sandboxDenied: false } });
      send({ method: 'process/closed', params: { processId: started, seq: 3 } });
    }
    return;
  }
  if (m.id === undefined) return;
  if (m.method === 'initialize') return send({ id: m.id, result: { sessionId: '00000000-0000-4000-8000-000000000000', extensions: ['x'], environmentInfo: {} } });
  if (m.method === 'fs/canonicalize') return send({ id: m.id, result: { path: ${JSON.stringify(ws)} } });
  if (m.method === 'process/start') {
    started = m.params.processId;
    send({ id: m.id, result: { processId: started, sandboxType: 'none' } });
    const ask = (id, processId, host, port, protocol) => send({ id, method: 'network/policyRequest', params: { processId, request: { protocol, host, port } } });
    ask('not-mine', 'never-started', 'evil.example', 80, 'http');
    send({ id: 'other-method', method: 'fs/readFile', params: { path: '/etc/shadow' } });
    ask('allowed', started, 'pypi.org', 443, 'https_connect');
    ask('denied', started, 'other.example', 80, 'http');
    return;
  }
  send({ id: m.id, error: { code: -32601, message: 'no' } });
});
`;

describe('agent endpoint relay: the host\'s network questions', () => {
  it('a host\'s network/policyRequest about a process this connection started is the user\'s question; a forged one or another method is refused unasked', async () => {
    const f = await endpointFor(scriptTarget('devbox', ASKING_HOST), {
      sandboxAll: false,
      answer: (q) => (/wants to reach pypi\.org:443/.test(q.message) ? 'Allow' : /wants to reach/.test(q.message) ? 'Deny' : 'Allow'),
    });
    try {
      const a = await f.agent();
      await a.handshake();
      const r = await a.send('process/start', start('net', ['/usr/bin/curl', 'https://pypi.org/simple/']));
      assert.ok(r.result, JSON.stringify(r.error));
      await waitFor(() => outputOf(a, 'net').endsWith('}') && outputOf(a, 'net'), { timeout: 20_000, what: 'the host\'s record of the answers' });
      const answers = JSON.parse(outputOf(a, 'net'));
      assert.deepEqual(answers['not-mine'], { decision: { type: 'deny', reason: 'not_allowed' } }, 'a process this connection never started: denied');
      assert.deepEqual(answers['other-method'], { error: -32601 }, 'no other request reaches the agent side');
      assert.deepEqual(answers.allowed, { decision: { type: 'allow' } });
      assert.equal(answers.denied?.decision?.type, 'deny');
      const network = f.questions.filter((q) => /wants to reach/.test(q.message));
      assert.deepEqual(network.map((q) => q.message.replace(/^.*wants to reach /, '')), ['pypi.org:443 (HTTPS)', 'other.example:80 (HTTP)']);
      // The question names the command the agent ran there.
      assert.match(network[0].message, /curl https:\/\/pypi\.org\/simple\//);
      assert.ok(!f.questions.some((q) => /evil\.example/.test(q.message + q.detail)), 'nothing asked about the forged question');
    } finally {
      await f.stop();
    }
  });
});

describe('agent endpoint relay to a real server: the relayed proxied launch is the gate\'s', () => {
  let origin: http.Server;
  let port: number;
  const seen: string[] = [];
  before(async () => {
    mkdirSync(ws, { recursive: true });
    origin = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      res.end(`origin ${req.url}\n`);
    });
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    port = (origin.address() as net.AddressInfo).port;
  });
  after(() => new Promise<void>((r) => origin.close(() => r())));

  // This project's CLI as the host's server (stdio), in this machine's namespaces: `runsc` leads
  // to 127.0.0.1 through /etc/hosts, where the origin listens (no real lookup).
  const hosts: ChildProcess[] = [];
  after(() => hosts.forEach((c) => c.kill('SIGKILL')));
  const realHost = (): RelayTarget => ({
    name: 'realhost',
    open: async () => {
      const { transport, child } = await spawnCommandTransport(process.execPath, [cliPath, '--listen', 'stdio://']);
      hosts.push(child);
      return new RpcChannel(transport, () => child.kill('SIGKILL'));
    },
  });
  const PROXY = { enabled: true, enableSocks5: true, enableSocks5Udp: false, allowUpstreamProxy: false, dangerouslyAllowAllUnixSockets: false, mode: 'full', allowLocalBinding: true };
  const fetch = (mark: string) =>
    `exec 3<>/dev/tcp/127.0.0.1/\${HTTP_PROXY##*:}; printf 'GET http://runsc:${port}/${mark} HTTP/1.1\\r\\nHost: runsc:${port}\\r\\nConnection: close\\r\\n\\r\\n' >&3; timeout 30 cat <&3`;

  it('attack: the agent\'s own "*": "allow" does not let its command out on the host; the host asks, Deny gets the 403, Allow reaches the origin', async () => {
    const f = await endpointFor(realHost(), { sandboxAll: false, answer: (q) => (/wants to reach runsc:/.test(q.message) ? (/relay-deny/.test(q.message) ? 'Deny' : 'Allow') : 'Allow') });
    try {
      const a = await f.agent();
      await a.handshake();
      for (const mark of ['relay-deny', 'relay-allow']) {
        const r = await a.send('process/start', {
          ...start(mark, ['/bin/bash', '-c', `: ${mark}\n${fetch(mark)}`]),
          env: { PATH: '/usr/bin:/bin' },
          sandbox: managedSandbox({ entries: workspaceWriteEntries(), cwd: `file://${ws}`, network: 'enabled' }),
          enforceManagedNetwork: true,
          networkProxy: { proxy: { ...PROXY, domains: { '*': 'allow', runsc: 'allow' } } },
        });
        assert.ok(r.result, JSON.stringify(r.error));
        await waitFor(() => closedOf(a, mark), { timeout: 60_000, what: `${mark} closed` });
      }
      assert.match(outputOf(a, 'relay-deny'), /403 Forbidden[\s\S]*user_denied/);
      assert.ok(!seen.includes('/relay-deny'), `the origin saw: ${seen.join(' ')}`);
      assert.match(outputOf(a, 'relay-allow'), /200 OK[\s\S]*origin \/relay-allow/);
      const network = f.questions.filter((q) => /wants to reach/.test(q.message));
      assert.equal(network.length, 2, f.questions.map((q) => q.message).join('\n'));
      assert.ok(network.every((q) => q.message.includes(`wants to reach runsc:${port} (HTTP)`)));
      // The host's decisions reach the agent, as a local engine's do (they were dropped as forged).
      const decisions = a.notifications.filter((n) => n.method === 'network/policyDecision').map((n) => n.params as { processId: string; decision: string });
      assert.deepEqual(decisions.map((d) => [d.processId, d.decision]), [['relay-deny', 'deny'], ['relay-allow', 'allow']]);
    } finally {
      await f.stop();
    }
  });
});
