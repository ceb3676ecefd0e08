// Attack (docs/security.md, the check-to-exec race) on the window between the gate's check of a granted program and the
// engine's exec of it: "Allow for Session" for `./b.sh`, a symlink to good.sh in the workspace;
// an unasked helper (a sandboxed command may write the workspace) re-points the link to evil.sh
// and back as fast as it can. Each start the gate judges while the link leads to good.sh is
// covered by the grant; if the engine then resolves `./b.sh` again, it runs evil.sh,
// unsandboxed and unasked (measured on the old code: 27 of 150 runs in the attack review).
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { processClosed, RawAgent, removeDir, startParams, tmpDir, withAgent } from '../../support/agent-attack';
import { waitFor } from '../../support/wait';
import { spawnTied } from '../../support/process';

let ws: string;
let outside: string;
before(() => {
  ws = tmpDir('agent-race-ws-');
  outside = tmpDir('agent-race-out-');
});
after(() => {
  removeDir(ws);
  removeDir(outside);
});

describe('agent gate: check-to-exec race for a granted program', () => {
  it('attack: a granted ./b.sh whose symlink is re-pointed in a loop never runs the other file', async () => {
    const evilRuns = path.join(outside, 'evil-runs');
    writeFileSync(path.join(ws, 'good.sh'), '#!/bin/sh\ntrue\n');
    writeFileSync(path.join(ws, 'evil.sh'), `#!/bin/sh\necho evil >> ${evilRuns}\n`);
    chmodSync(path.join(ws, 'good.sh'), 0o755);
    chmodSync(path.join(ws, 'evil.sh'), 0o755);
    symlinkSync('good.sh', path.join(ws, 'b.sh'));
    let asked = 0;
    await withAgent({ roots: [ws], policy: 'askOutsideWorkspace', answer: () => (asked++ === 0 ? 'Allow for Session' : 'Deny') }, async (_f, a) => {
      // The grant, given while b.sh leads to good.sh.
      assert.ok((await a.send('process/start', startParams('g0', ['./b.sh'], ws))).result);
      await processClosed(a, 'g0');
      // The unasked helper: re-points b.sh atomically (rename over it), good → evil → good…
      const flipper = spawnTied('/bin/bash', ['-c', `cd ${ws}; while :; do ln -sfn evil.sh t1 && mv -T t1 b.sh; ln -sfn good.sh t2 && mv -T t2 b.sh; done`], { stdio: 'ignore' });
      let allowed = 0;
      try {
        for (let i = 1; i <= 150; i++) {
          const r = await a.send('process/start', startParams(`g${i}`, ['./b.sh'], ws));
          if (r.result) {
            allowed++;
            await processClosed(a, `g${i}`);
          }
        }
      } finally {
        flipper.kill('SIGKILL');
        await waitFor(() => flipper.exitCode !== null || flipper.signalCode !== null, { what: 'the flipper to exit' });
      }
      const evil = existsSync(evilRuns) ? readFileSync(evilRuns, 'utf8').split('\n').filter(Boolean).length : 0;
      assert.ok(allowed > 0, 'some starts were covered by the grant (the race was run)');
      assert.equal(evil, 0, `${evil} of ${allowed} granted runs executed evil.sh`);
    });
  });
});
