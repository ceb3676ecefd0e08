// Path facts are reads (src/extension/agent/request.ts): fs/getMetadata, fs/canonicalize and
// fs/watchMissing of a path in a credential store or /proc ask under the default and alwaysAsk
// policies, as fs/readFile does; a denial tells the agent nothing of the file. Each ran unasked
// before (docs/security.md, "Agent endpoint: threat model"). What Codex probes at every turn
// (`.git` above the workspace) stays unasked.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RawAgent, removeDir, startEndpoint, tmpDir, uri } from '../../support/agent-attack';

let ws: string;
let home: string;
before(() => {
  ws = tmpDir('agent-facts-ws-');
  home = tmpDir('agent-facts-home-');
  mkdirSync(path.join(home, '.ssh'));
  writeFileSync(path.join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY');
  writeFileSync(path.join(ws, 'inside.txt'), 'x');
});
after(() => {
  removeDir(ws);
  removeDir(home);
});

const key = () => uri(path.join(home, '.ssh', 'id_ed25519'));
const requests = () =>
  [
    ['fs/getMetadata', { path: key() }],
    ['fs/canonicalize', { path: key() }],
    ['fs/canonicalize', { path: uri(`/proc/${process.pid}/cwd`) }],
    ['fs/watchMissing', { watchId: 7, missing: [uri(path.join(home, '.ssh', 'new-key'))] }],
  ] as const;

describe('path facts outside the workspace', () => {
  for (const policy of ['askOutsideWorkspace', 'alwaysAsk'] as const) {
    it(`${policy}: metadata, real paths and creation watches in a credential store or /proc are asked; Deny refuses them`, async () => {
      const f = await startEndpoint({ policy, roots: [ws], homeDir: home, answer: () => 'Deny' });
      const a = await RawAgent.connect(f.url, f.token);
      try {
        await a.handshake();
        for (const [method, params] of requests()) {
          const before = f.questions.length;
          const r = await a.send(method, params);
          assert.equal(f.questions.length, before + 1, `${method} ${JSON.stringify(params)} was asked`);
          assert.ok(r.result === undefined, `${method}: denied, nothing answered (${JSON.stringify(r.result)})`);
          assert.match(r.error?.message ?? '', /not approved/);
        }
        assert.match(f.questions[0].message, /read the metadata of/);
        // Inside the workspace the default policy still answers at once.
        const asked = f.questions.length;
        const inside = await a.send('fs/getMetadata', { path: uri(path.join(ws, 'inside.txt')) });
        assert.ok(inside.result, `inside: ${inside.error?.message}`);
        // Codex's repository discovery above the workspace: unasked.
        const probe = await a.send('fs/getMetadata', { path: uri(path.join(path.dirname(ws), '.git')) });
        assert.doesNotMatch(probe.error?.message ?? '', /not approved/, 'answered by the engine');
        assert.equal(f.questions.length, asked, 'neither was asked');
      } finally {
        a.close();
        await f.stop();
      }
    });
  }

  it('an Allow still answers them', async () => {
    const f = await startEndpoint({ policy: 'alwaysAsk', roots: [ws], homeDir: home, answer: () => 'Allow' });
    const a = await RawAgent.connect(f.url, f.token);
    try {
      await a.handshake();
      const md = await a.send('fs/getMetadata', { path: key() });
      assert.equal((md.result as { isFile?: boolean }).isFile, true);
      const real = await a.send('fs/canonicalize', { path: key() });
      assert.ok(String((real.result as { path: string }).path).endsWith('id_ed25519'));
    } finally {
      a.close();
      await f.stop();
    }
  });
});
