// process/terminate against a child that left its process group (src/server/process/child.ts):
// `setsid` puts a descendant in a session and group of its own, so killing the group missed it
// and it outlived the terminated process (a pipe child and a PTY child alike). Its pid is written
// to a file; after the terminate it must be gone. docs/security.md, "The listener" (limits).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { ExecServer } from '../../../src/server/exec-server';
import { isAlive } from '../../support/process';
import { connectClient, startParams, tmpDir } from '../../support/server';
import { waitFor } from '../../support/wait';

const dir = tmpDir('setsid-');
const server = new ExecServer();
const leftovers: number[] = [];
after(async () => {
  for (const pid of leftovers) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  await server.shutdown();
});

for (const tty of [false, true]) {
  test(`process/terminate kills a descendant that called setsid (${tty ? 'pty' : 'pipe'})`, async () => {
    const c = await connectClient(server);
    const pidFile = path.join(dir, `escaped-${tty}`);
    // setsid -f: the escaped sleep's parent is the shell (it stays a descendant), in its own session.
    const script = `setsid sh -c 'echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 300' & sleep 300`;
    await c.call('process/start', startParams(`p-${tty}`, ['/bin/sh', '-c', script], { tty }));
    await waitFor(() => existsSync(pidFile), { what: 'the setsid child to start' });
    const escaped = Number(readFileSync(pidFile, 'utf8'));
    leftovers.push(escaped);
    assert.ok(isAlive(escaped));
    assert.equal((await c.call('process/terminate', { processId: `p-${tty}` })).running, true);
    await waitFor(() => c.sink.events.some((e) => e.method === 'process/closed'), { what: 'the process to close' });
    // Before: the setsid child lived on (its own group; the kill went to the leader's group only).
    await waitFor(() => !isAlive(escaped), { what: `the setsid child ${escaped} to be killed`, timeout: 5_000 });
    c.conn.close();
  });
}
