// The detached server's sentinel on its own (src/cli/sentinel.ts, `--sentinel-of`), fed through its
// pipe as a server feeds it: when the pipe ends without "bye" it kills each recorded child whose
// pid still has the recorded starttime, leaves alone one whose pid now has another (a reused pid:
// a real live process recorded with a starttime that is not its own, which is what a reused pid
// looks like) and one the server said is gone, and removes the record only if it names the
// server; after "bye" it kills nothing.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { procStartTime, SENTINEL_FLAG } from '../../src/cli/sentinel';
import { cliPath } from '../support/cli';
import { isAlive } from '../support/process';
import { tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';

const work = tempDir('cli-sentinel-');
const procs = new Set<ChildProcess>();
after(() => {
  for (const p of procs) p.kill('SIGKILL');
});

function sleeper(): number {
  const c = spawn('/bin/sleep', ['600'], { stdio: 'ignore', detached: true });
  procs.add(c);
  return c.pid!;
}

/** A sentinel for the made-up server `serverPid`; resolves with its exit code and stderr once it exits. */
function sentinel(serverPid: number, record: string): { child: ChildProcess; done: Promise<{ code: number | null; stderr: string }> } {
  const child = spawn(process.execPath, [cliPath, SENTINEL_FLAG, String(serverPid), record], { stdio: ['pipe', 'ignore', 'pipe'] });
  procs.add(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return { child, done: new Promise((r) => child.on('close', (code) => r({ code, stderr }))) };
}

describe('the detached server sentinel', () => {
  it('kills recorded children whose pid is still theirs, not a reused pid nor one gone; removes the record naming the server', async () => {
    const [ours, reused, ended] = [sleeper(), sleeper(), sleeper()];
    const record = path.join(work, 'a.json');
    const serverPid = 999_999; // only compared with the record
    writeFileSync(record, JSON.stringify({ pid: serverPid, port: 1, token: 't', version: 'v' }));
    const s = sentinel(serverPid, record);
    const start = (p: number) => procStartTime(p)!;
    s.child.stdin!.write(`+${ours} ${start(ours)}\n+${reused} ${Number(start(reused)) + 1}\n+${ended} ${start(ended)}\n-${ended}\n`);
    s.child.stdin!.end(); // the server died: no "bye"
    const r = await s.done;
    assert.equal(r.code, 0, r.stderr);
    await waitFor(() => !isAlive(ours), { what: 'the recorded child to be killed', timeout: 5000 });
    assert.ok(isAlive(reused), 'a pid whose starttime is not the recorded one is left alone');
    assert.ok(isAlive(ended), 'a child the server said is gone is left alone');
    assert.equal(existsSync(record), false, 'the record naming the dead server is removed');
    assert.match(r.stderr, /server pid 999999 ended without a clean exit: killed 1 of 2 process trees \(1 pids now another process's: left alone\); removed its run record/);
  });

  it('a record naming another server stays; after "bye" nothing is killed', async () => {
    const child = sleeper();
    const record = path.join(work, 'b.json');
    writeFileSync(record, JSON.stringify({ pid: 12345, port: 1, token: 't', version: 'v' }));
    const s = sentinel(999_998, record);
    s.child.stdin!.write(`+${child} ${procStartTime(child)}\nbye\n`);
    const r = await s.done; // exits on "bye", before its pipe ends
    assert.equal(r.code, 0, r.stderr);
    assert.ok(isAlive(child), 'nothing is killed after a clean exit');
    assert.equal(r.stderr, '');
    assert.equal(existsSync(record), true);

    const s2 = sentinel(999_998, record);
    s2.child.stdin!.end();
    assert.match((await s2.done).stderr, /killed 0 of 0 process trees$/m);
    assert.equal(existsSync(record), true, 'a record naming another server stays');
  });
});
