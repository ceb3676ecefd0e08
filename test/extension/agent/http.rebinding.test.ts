// DNS rebinding under the agent gate's http/request approval (attack tests). The user is asked
// about a URL with a host NAME; the attacker controls what that name resolves to and makes it
// resolve to 127.0.0.1 — where a service the user never approved listens — at the moment the
// engine connects: right after the question was answered, or on a later request covered by an
// "Allow for Session" grant. The process's resolver (node:dns lookup, which both the gate and
// Node's fetch use) is replaced here by the attacker's DNS: no real DNS is asked. The public
// answer is in 192.0.2.0/24 (TEST-NET-1, documentation: never routed, nothing answers).
import assert from 'node:assert/strict';
import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isLocalAddress } from '../../../src/extension/agent/http';
import { withAgent } from '../../support/agent-attack';

/** The attacker's DNS for names under .rebind.test; other names go to the real resolver (the fixture's own). */
const attackerDns: { answer: string | (() => string); asked: number } = { answer: '192.0.2.10', asked: 0 };
const realLookup = dns.lookup;

type LookupCallback = (err: NodeJS.ErrnoException | null, address?: string | dns.LookupAddress[], family?: number) => void;

function attackerLookup(host: string, options: unknown, callback?: LookupCallback): void {
  if (!host.endsWith('.rebind.test')) return (realLookup as (...a: unknown[]) => void)(host, options, callback);
  const cb = (typeof options === 'function' ? options : callback) as LookupCallback;
  const opts = (typeof options === 'object' && options !== null ? options : {}) as { all?: boolean };
  process.nextTick(() => {
    attackerDns.asked++;
    const address = typeof attackerDns.answer === 'function' ? attackerDns.answer() : attackerDns.answer;
    const family = address.includes(':') ? 6 : 4;
    if (opts.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  });
}

describe('agent http/request: DNS rebinding (attacks)', () => {
  let secret: http.Server;
  let secretHits = 0;
  let port = 0;

  before(async () => {
    (dns as { lookup: unknown }).lookup = attackerLookup;
    // The local service the user never approved: on 127.0.0.1, the port of the approved URL.
    secret = http.createServer((_req, res) => {
      secretHits++;
      res.end('local admin secret');
    });
    await new Promise<void>((r) => secret.listen(0, '127.0.0.1', r));
    port = (secret.address() as AddressInfo).port;
  });

  after(() => {
    (dns as { lookup: unknown }).lookup = realLookup;
    secret.close();
  });

  it('the name resolves to a public address while the question is open and to 127.0.0.1 once "Allow" is clicked: the local service is not reached', async () => {
    secretHits = 0;
    attackerDns.answer = '192.0.2.10';
    const url = `http://a.rebind.test:${port}/admin`;
    await withAgent(
      {
        policy: 'askOutsideWorkspace',
        answer: () => {
          // The attacker's DNS changes its answer while the user reads the question.
          attackerDns.answer = '127.0.0.1';
          return 'Allow';
        },
      },
      async (f, a) => {
        const r = await a.send('http/request', { method: 'GET', url, headers: [], requestId: 'r1', timeoutMs: 3000 });
        assert.equal(secretHits, 0, `the local service was reached: ${JSON.stringify(r.result ?? r.error)}`);
        assert.equal(f.questions.length, 1);
        assert.doesNotMatch(f.questions[0].message, /resolves to 127\.0\.0\.1/, 'the question was asked while the name pointed elsewhere');
        assert.match(r.error?.message ?? '', /changed while the question was open/);
        assert.doesNotMatch(Buffer.from((r.result as { bodyBase64?: string } | undefined)?.bodyBase64 ?? '', 'base64').toString(), /secret/);
      },
    );
  });

  it('"Allow for Session" on a name that resolved to a public address does not cover it once it resolves to 127.0.0.1: asked again, naming the local address', async () => {
    secretHits = 0;
    attackerDns.answer = '192.0.2.10';
    const url = `http://b.rebind.test:${port}/admin`;
    await withAgent({ policy: 'askOutsideWorkspace', answer: (q) => (/resolves to 127\.0\.0\.1/.test(q.message) ? 'Deny' : 'Allow for Session') }, async (f, a) => {
      // Granted while it points to a public address (that request goes nowhere: TEST-NET-1).
      await a.send('http/request', { method: 'GET', url, headers: [], requestId: 'g1', timeoutMs: 500 });
      assert.equal(f.questions.length, 1);
      // The attacker rebinds the name; the next request to the same origin.
      attackerDns.answer = '127.0.0.1';
      const r = await a.send('http/request', { method: 'GET', url, headers: [], requestId: 'g2', timeoutMs: 3000 });
      assert.equal(secretHits, 0, `the grant reached the local service: ${JSON.stringify(r.result ?? r.error)}`);
      assert.equal(f.questions.length, 2, 'asked again');
      assert.match(f.questions[0].message, /resolves to 192\.0\.2\.10/, `the first question showed where the name led: ${f.questions[0].message}`);
      assert.match(f.questions[1].message, /resolves to 127\.0\.0\.1/, `the new question names the local address: ${f.questions[1].message}`);
      assert.match(r.error?.message ?? '', /not approved/);
    });
  });

  it('a granted request: the name is re-pointed to 127.0.0.1 after the gate allowed it, before the engine connects — the engine connects where the gate judged', async () => {
    secretHits = 0;
    attackerDns.answer = '192.0.2.10';
    const url = `http://c.rebind.test:${port}/admin`;
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => 'Allow for Session' }, async (f, a) => {
      await a.send('http/request', { method: 'GET', url, headers: [], requestId: 'p1', timeoutMs: 500 });
      assert.equal(f.questions.length, 1);
      // From the moment the gate has let the second request through (its log line), the
      // attacker's DNS answers 127.0.0.1.
      const allowed = () => f.logs.some((l) => l.includes('allowed for this session') && l.includes('"p2"'));
      attackerDns.answer = () => (allowed() ? '127.0.0.1' : '192.0.2.10');
      const r = await a.send('http/request', { method: 'GET', url, headers: [], requestId: 'p2', timeoutMs: 500 });
      assert.ok(allowed(), 'the grant covered the second request');
      assert.equal(secretHits, 0, `the engine resolved the name again and reached the local service: ${JSON.stringify(r.result ?? r.error)}`);
      assert.equal(f.questions.length, 1);
      assert.ok(r.error, 'it went where the gate judged (192.0.2.10, nothing answers)');
    });
  });

  it('a name the user allowed while it resolved to 127.0.0.1 (shown in the question) reaches it, under the grant too', async () => {
    secretHits = 0;
    attackerDns.answer = '127.0.0.1';
    const url = `http://dev.rebind.test:${port}/`;
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => 'Allow for Session' }, async (f, a) => {
      for (const id of ['d1', 'd2']) {
        const r = await a.send('http/request', { method: 'GET', url, headers: [], requestId: id });
        assert.equal((r.result as { status?: number } | undefined)?.status, 200, JSON.stringify(r.error));
      }
      assert.equal(f.questions.length, 1, 'the second request was covered by the grant');
      assert.match(f.questions[0].message, /dev\.rebind\.test resolves to 127\.0\.0\.1/);
      assert.equal(secretHits, 2);
    });
  });
});

describe('agent http/request: which addresses count as this machine or a private network', () => {
  it('loopback, private, link-local (metadata), CGNAT, unspecified, ULA and IPv4-mapped forms are local; public ones are not', () => {
    const local = ['127.0.0.1', '127.1.2.3', '10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '198.18.0.1', '224.0.0.1', '255.255.255.255', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:169.254.169.254', 'not-an-address'];
    const remote = ['93.184.216.34', '8.8.8.8', '172.32.0.1', '192.0.2.10', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'];
    for (const a of local) assert.equal(isLocalAddress(a), true, a);
    for (const a of remote) assert.equal(isLocalAddress(a), false, a);
  });
});

