// The answerer of a user-driven environment's network questions (src/extension/approval/
// network-questions.ts) on its own: only network/policyRequest is answered, a malformed one is
// denied unasked, at most MAX_OPEN_NETWORK_QUESTIONS are open at once (a command flooding names
// gets denials, never a wall of toasts), and the engine giving up settles the question as a deny.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { environmentNetworkQuestions, MAX_OPEN_NETWORK_QUESTIONS, type NetworkQuestionHost, type UserNetworkQuestion } from '../../../src/extension/approval/network-questions';
import { RpcError } from '../../../src/protocol/errors';

function host(more: Partial<NetworkQuestionHost> = {}): NetworkQuestionHost & { asked: UserNetworkQuestion[]; denied: number[] } {
  const asked: UserNetworkQuestion[] = [];
  const denied: number[] = [];
  return { asked, denied, policy: () => 'askOutsideWorkspace', allowedDomains: () => [], timeoutMs: () => 60_000, ask: (q) => (asked.push(q), new Promise(() => {})), timedOut: (q) => denied.push(q.id), ...more };
}
const q = (h: string, processId = 'p1') => ({ processId, request: { protocol: 'https_connect', host: h, port: 443 } });

describe('environment network questions', () => {
  it('answers only network/policyRequest; a malformed one is denied unasked', async () => {
    const h = host();
    const answer = environmentNetworkQuestions('devbox', h);
    const live = new AbortController().signal;
    await assert.rejects(answer('fs/readFile', {}, live), (e: unknown) => e instanceof RpcError && e.code === -32601);
    assert.deepEqual(await answer('network/policyRequest', { processId: 'p', request: { host: 5, port: 443 } }, live), { decision: { type: 'deny', reason: 'not_allowed' } });
    assert.deepEqual(await answer('network/policyRequest', null, live), { decision: { type: 'deny', reason: 'not_allowed' } });
    assert.equal(h.asked.length, 0);
  });

  it(`a flood: ${MAX_OPEN_NETWORK_QUESTIONS} open at once, the rest denied at once; neverAsk allows unasked`, async () => {
    const h = host();
    const answer = environmentNetworkQuestions('devbox', h);
    const stop = new AbortController();
    const all = Array.from({ length: 40 }, (_, i) => answer('network/policyRequest', q(`h${i}.test`), stop.signal));
    // Denied at once: these settle while the first ones are still open.
    const early = await Promise.all(all.slice(MAX_OPEN_NETWORK_QUESTIONS));
    assert.deepEqual(early, Array(40 - MAX_OPEN_NETWORK_QUESTIONS).fill({ decision: { type: 'deny', reason: 'too_many_questions' } }));
    assert.equal(h.asked.length, MAX_OPEN_NETWORK_QUESTIONS);
    assert.equal(h.asked[0].message, 'Exec Server: devbox: a command wants to reach h0.test:443 (HTTPS)');
    // The engine stops waiting (its timeout, the connection gone): every open one is a deny, and said so.
    stop.abort();
    for (const a of await Promise.all(all.slice(0, MAX_OPEN_NETWORK_QUESTIONS))) assert.deepEqual(a, { decision: { type: 'deny', reason: 'timed_out' } });
    assert.equal(h.denied.length, MAX_OPEN_NETWORK_QUESTIONS);
    // Room again once they settled.
    const next = answer('network/policyRequest', q('later.test'), new AbortController().signal);
    await new Promise((r) => setImmediate(r));
    assert.equal(h.asked.at(-1)?.message, 'Exec Server: devbox: a command wants to reach later.test:443 (HTTPS)');
    void next;
    const free = environmentNetworkQuestions('devbox', host({ policy: () => 'neverAsk' }));
    assert.deepEqual(await free('network/policyRequest', q('any.test'), new AbortController().signal), { decision: { type: 'allow' } });
  });
});
