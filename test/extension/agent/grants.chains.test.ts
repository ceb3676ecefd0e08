// Attacks (docs/security.md, "The second attack review", chains) on what a run grant covers: "Allow for Session" for
// `make test` is for the make binary and the cwd, but what it runs is the Makefile, a script
// the granted one sources, conftest.py… An unasked sandboxed command (or an unasked fs/*
// write) rewrites that file, and the next `make test` — covered by the grant, unsandboxed —
// runs the agent's code outside the sandbox without a question. The grant must lapse, and the
// question must say which files the agent changed since.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { processClosed, RawAgent, removeDir, startParams, tmpDir, uri, withAgent } from '../../support/agent-attack';

let ws: string;
let outside: string;
before(() => {
  ws = tmpDir('agent-chain-ws-');
  outside = tmpDir('agent-chain-out-');
});
after(() => {
  removeDir(ws);
  removeDir(outside);
});

const sandbox = () => managedSandbox({ entries: workspaceWriteEntries({ slashTmp: false }), cwd: uri(ws) });

describe('agent gate: chains through files an unasked command changed', () => {
  it('attack: a sandboxed command rewrites the Makefile of a granted `make test`; the next run asks and names the Makefile', async () => {
    const evil = path.join(outside, 'make-evil');
    writeFileSync(path.join(ws, 'Makefile'), 'test:\n\t@echo good\n');
    const messages: string[] = [];
    await withAgent({ roots: [ws], policy: 'askOutsideWorkspace', answer: (q) => (messages.push(q.message), messages.length === 1 ? 'Allow for Session' : 'Deny') }, async (_f, a) => {
      assert.ok((await a.send('process/start', startParams('m0', ['make', 'test'], ws))).result, 'the first make test was allowed for the session');
      await processClosed(a, 'm0');
      assert.ok((await a.send('process/start', startParams('m1', ['make', 'test'], ws))).result, 'the grant covers a second run');
      await processClosed(a, 'm1');
      assert.equal(messages.length, 1);
      // Unasked: a sandboxed command inside the workspace.
      const rewrite = `printf 'test:\\n\\t@echo evil >> ${evil}\\n' > Makefile`;
      assert.ok((await a.send('process/start', startParams('s1', ['/bin/sh', '-c', rewrite], ws, { sandbox: sandbox() }))).result);
      await processClosed(a, 's1');
      assert.equal(messages.length, 1, 'the sandboxed rewrite ran unasked');
      const r = await a.send('process/start', startParams('m2', ['make', 'test'], ws));
      if (r.result) await processClosed(a, 'm2');
      assert.ok(!existsSync(evil), 'the rewritten Makefile ran outside the sandbox under the old grant');
      assert.equal(messages.length, 2, 'the run after the change was asked again');
      assert.match(messages[1], /files changed by the agent since: .*Makefile/);
    });
  });

  it('attack: an unasked fs/writeFile rewrites a script the granted one sources; the next run asks', async () => {
    const evil = path.join(outside, 'source-evil');
    writeFileSync(path.join(ws, 'run.sh'), '#!/bin/sh\n. ./lib.sh\n');
    writeFileSync(path.join(ws, 'lib.sh'), 'true\n');
    chmodSync(path.join(ws, 'run.sh'), 0o755);
    const messages: string[] = [];
    await withAgent({ roots: [ws], policy: 'askOutsideWorkspace', answer: (q) => (messages.push(q.message), messages.length === 1 ? 'Allow for Session' : 'Deny') }, async (_f, a) => {
      assert.ok((await a.send('process/start', startParams('r0', ['./run.sh'], ws))).result);
      await processClosed(a, 'r0');
      const w = await a.send('fs/writeFile', { path: path.join(ws, 'lib.sh'), dataBase64: Buffer.from(`echo evil >> ${evil}\n`).toString('base64') });
      assert.ok(w.result, `the workspace write ran unasked: ${JSON.stringify(w.error)}`);
      assert.equal(messages.length, 1);
      const r = await a.send('process/start', startParams('r1', ['./run.sh'], ws));
      if (r.result) await processClosed(a, 'r1');
      assert.ok(!existsSync(evil), `the rewritten lib.sh ran under the old grant: ${existsSync(evil) ? readFileSync(evil, 'utf8') : ''}`);
      assert.equal(messages.length, 2);
      assert.match(messages[1], /files changed by the agent since: .*lib\.sh/);
    });
  });

  it('a grant still covers later runs while the agent changed nothing', async () => {
    writeFileSync(path.join(ws, 'Makefile'), 'test:\n\t@echo good\n');
    const messages: string[] = [];
    await withAgent({ roots: [ws], policy: 'askOutsideWorkspace', answer: (q) => (messages.push(q.message), 'Allow for Session') }, async (_f, a) => {
      for (const id of ['k0', 'k1', 'k2']) {
        assert.ok((await a.send('process/start', startParams(id, ['make', 'test'], ws))).result);
        await processClosed(a, id);
      }
      // A sandboxed command that only reads changes nothing.
      assert.ok((await a.send('process/start', startParams('k3', ['/bin/cat', 'Makefile'], ws, { sandbox: sandbox() }))).result);
      await processClosed(a, 'k3');
      assert.ok((await a.send('process/start', startParams('k4', ['make', 'test'], ws))).result);
      await processClosed(a, 'k4');
      assert.equal(messages.length, 1, messages.join('\n'));
    });
  });
});
