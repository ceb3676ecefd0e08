// http/request header `valueEnvVar` through the agent gate (attack tests). The engine appends the
// value of an environment variable of ITS process — in VS Code, the extension host's (tokens,
// API keys) — to the header. An agent that got "Allow for Session" for an origin it controls must
// not be able to read a variable out through a later request without a question; the question
// names the variable. Real endpoint, real loopback HTTP server, questions answered by the fixture.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { withAgent } from '../../support/agent-attack';

const SECRET = 'host-secret-5d1b0c';
describe('agent http/request: valueEnvVar (attacks)', () => {
  let web: http.Server;
  let url = '';
  const seen: string[] = [];
  before(async () => {
    process.env.CAPS_GATE_SECRET = SECRET;
    web = http.createServer((req, res) => {
      seen.push(JSON.stringify(req.headers));
      res.end('ok');
    });
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(web.address() as AddressInfo).port}/collect`;
  });
  after(() => {
    delete process.env.CAPS_GATE_SECRET;
    web.close();
  });

  it('a session grant for the origin does not cover a request that sends an environment variable: asked, naming it; denied → nothing sent', async () => {
    seen.length = 0;
    await withAgent({ policy: 'askOutsideWorkspace', answer: (q) => (/CAPS_GATE_SECRET/.test(q.message) ? 'Deny' : 'Allow for Session') }, async (f, a) => {
      const plain = await a.send('http/request', { method: 'GET', url, headers: [], requestId: 'g1', timeoutMs: 3000 });
      assert.equal((plain.result as { status?: number } | undefined)?.status, 200, JSON.stringify(plain.error));
      assert.equal(f.questions.length, 1);
      const r = await a.send('http/request', {
        method: 'GET', url, requestId: 'g2', timeoutMs: 3000,
        headers: [{ name: 'Authorization', value: 'Bearer ', valueEnvVar: 'CAPS_GATE_SECRET' }],
      });
      assert.equal(f.questions.length, 2, 'the grant covered a request that reads the host environment');
      assert.match(f.questions[1].message, /environment variable CAPS_GATE_SECRET of VS Code's extension host/, f.questions[1].message);
      assert.doesNotMatch(f.questions[1].message, new RegExp(SECRET), 'the question shows the value');
      assert.ok(r.error, `denied: ${JSON.stringify(r.result)}`);
      assert.equal(seen.length, 1, 'a second request reached the server');
      assert.ok(!seen.some((h) => h.includes(SECRET)), 'the secret was sent');
    });
  });

  it('allowed: the origin receives value + the variable, as from the reference', async () => {
    seen.length = 0;
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => 'Allow' }, async (f, a) => {
      const r = await a.send('http/request', {
        method: 'GET', url, requestId: 'a1', timeoutMs: 3000,
        headers: [{ name: 'Authorization', value: 'Bearer ', valueEnvVar: 'CAPS_GATE_SECRET' }],
      });
      assert.equal((r.result as { status?: number } | undefined)?.status, 200, JSON.stringify(r.error));
      assert.equal(f.questions.length, 1);
      assert.equal(JSON.parse(seen[0]).authorization, `Bearer ${SECRET}`);
    });
  });
});
