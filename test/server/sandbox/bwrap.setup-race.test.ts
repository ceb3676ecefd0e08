// The race itself (src/server/sandbox/setup-retry.ts), with the real bubblewrap: sandboxed starts
// with /tmp writable (every `.git` there a read-only carve-out) while another process makes and
// removes repositories in /tmp, as test suites do. A `.git` removed while bwrap mounts it ends
// bwrap with "Can't bind mount …" (exit 1) before the command ran: without the retry about 1 start
// in 20 here got that line instead of its output (the build before the retry: 6 of 100 and 4 of
// 200, CHANGELOG). Every start must run its command once and give its output; the starts go on
// until some setup was retried (so the race did happen), at least MIN_STARTS of them.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { setupRetries } from '../../../src/server/sandbox/setup-retry';
import { serverWithTmpDir, startParams, uri, type Client } from '../../support/server';

const MIN_STARTS = 40;
const MAX_STARTS = 400;
let c: Client;
let dir: string;
let close: () => Promise<void>;
const churn = fs.mkdtempSync(path.join(os.tmpdir(), 'es-setup-race-'));

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
});
after(async () => {
  await close();
  fs.rmSync(churn, { recursive: true, force: true });
});

test('sandboxed starts while another process makes and removes repositories in /tmp: each runs its command once and gives its output, a setup that lost a carve-out is done again', async () => {
  const W = path.join(dir, 'work');
  fs.mkdirSync(W, { recursive: true });
  const churner = spawn('/bin/bash', ['-c', 'while :; do for i in $(seq 0 29); do mkdir -p r$i/.git; done; rm -rf r*; done'], { cwd: churn, stdio: 'ignore' });
  const retried0 = setupRetries.count;
  const sandbox = managedSandbox({ entries: workspaceWriteEntries(), cwd: uri(W) });
  const bad: string[] = [];
  let n = 0;
  try {
    for (; n < MAX_STARTS && (n < MIN_STARTS || setupRetries.count === retried0); n++) {
      const id = `s${n}`;
      await c.call('process/start', startParams(id, ['/bin/bash', '-c', `echo ${id} >> runs; echo ok`], { cwd: uri(W), sandbox }));
      await c.sink.waitFor(() => c.sink.closed(id), 30_000, `${id} closed`);
      const exit = c.sink.forProcess(id).find((e) => e.method === 'process/exited')!.params.exitCode;
      const out = c.sink.outputText(id);
      if (out !== 'ok\n' || exit !== 0) bad.push(`${id}: exit ${exit}, ${JSON.stringify(out.slice(0, 300))}`);
    }
  } finally {
    churner.kill('SIGKILL');
  }
  assert.deepEqual(bad, [], `${bad.length} of ${n} starts`);
  const runs = fs.readFileSync(path.join(W, 'runs'), 'utf8').split('\n').filter(Boolean);
  assert.equal(runs.length, n, 'each command ran once');
  assert.equal(new Set(runs).size, n);
  assert.ok(setupRetries.count > retried0, `no setup lost a carve-out in ${n} starts: the race did not happen`);
});
