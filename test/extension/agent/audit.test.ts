// The agent audit log outlives its endpoint (src/extension/agent/audit.ts, docs/security.md
// "Remote endpoints"): with a file, every gate decision is appended as a JSON line and read back
// when the endpoint starts again (a window reload), secrets masked there as in memory, the file
// 0600 in a 0700 folder; the bound holds on disk too (the file is rewritten past twice the
// bound), and a cut line or another environment's record is skipped. On the old code a new
// endpoint's log started empty.
import { strict as assert } from 'node:assert';
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { AuditLog, auditFileOf } from '../../../src/extension/agent/audit';
import { AgentEndpoint } from '../../../src/extension/agent/endpoint';
import { RawAgent } from '../../support/agent-attack';
import { tempDir } from '../../support/tmp';

const work = tempDir('agent-audit-');

async function endpoint(file: string): Promise<AgentEndpoint> {
  return AgentEndpoint.start({
    port: 0,
    auditFile: file,
    gate: { policy: () => 'askOutsideWorkspace', sandboxAll: () => false, timeoutMs: () => 10_000, workspaceRoots: () => [work], ask: async () => 'Deny' },
  });
}

describe('agent audit log across reloads', () => {
  it('a new endpoint (the reloaded window) reads back the decisions of the previous one, secrets masked', async () => {
    const dir = path.join(work, 'audit');
    const file = auditFileOf(dir, 'Local');
    const first = await endpoint(file);
    try {
      const a = await RawAgent.connect(first.url, first.token);
      await a.handshake();
      const r = await a.send('process/start', { processId: 'x', argv: ['/bin/sh', '-c', 'echo hi'], cwd: pathToFileURL('/').href, env: { API_TOKEN: 'hunter2-audit' }, tty: false, pipeStdin: false, arg0: null });
      assert.match(r.error?.message ?? '', /not approved/);
      a.close();
    } finally {
      await first.stop();
    }
    const before = first.audit.list().map((x) => [x.method, x.outcome, x.by]);
    assert.ok(before.some(([m, o, b]) => m === 'process/start' && o === 'refused' && b === 'user'), JSON.stringify(before));
    const second = await endpoint(file);
    try {
      assert.deepEqual(second.audit.list(), first.audit.list(), 'every record, read back');
    } finally {
      await second.stop();
    }
    const text = readFileSync(file, 'utf8');
    assert.doesNotMatch(text, /hunter2/, 'the secret is masked on disk');
    assert.ok(text.split('\n').some((l) => l && /"API_TOKEN":"<redacted>"/.test((JSON.parse(l) as { request: string }).request)), text);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
  });

  it('bounded on disk; a cut line and another environment\'s record are skipped', () => {
    const file = auditFileOf(path.join(work, 'bounded'), 'devbox');
    const log = new AuditLog('devbox', 3, file);
    for (let i = 0; i < 10; i++) log.add({ connection: 'c', method: `m${i}`, request: '{}', outcome: 'allowed', by: 'rule', why: 'test' });
    assert.ok(readFileSync(file, 'utf8').trim().split('\n').length <= 6, 'rewritten past twice the bound');
    appendFileSync(file, '{"time":"cut');
    appendFileSync(file, `\n${JSON.stringify({ time: 't', environment: 'other', connection: 'c', method: 'forged', request: '{}', outcome: 'allowed', by: 'rule', why: 'w' })}\n`);
    assert.deepEqual(new AuditLog('devbox', 3, file).list().map((r) => r.method), ['m7', 'm8', 'm9']);
  });
});
