// process/terminate against a descendant that a double fork took out of reach of parent links
// (src/server/process/child.ts): `setsid -f` forks, the forked child makes a session and group of
// its own, and its parent exits at once, so the kernel re-parents it to init. Neither the group
// kill nor the walk of parent links finds it, yet it still holds the process's stdout pipe or its
// terminal. With the leader alive and with the leader already exited (then the process never
// closes, since the orphan keeps the pipe or terminal open), for pipes and PTYs: after
// process/terminate the orphan must be gone and the process closed. docs/security.md, "The listener" (limits).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { ExecServer } from '../../../src/server/exec-server';
import { isAlive } from '../../support/process';
import { connectClient, startParams, tmpDir } from '../../support/server';
import { waitFor } from '../../support/wait';

const dir = tmpDir('double-fork-');
const server = new ExecServer();
const leftovers: number[] = [];
after(async () => {
  for (const pid of leftovers) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  await server.shutdown();
});

const ppidOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);

for (const tty of [false, true]) {
  for (const leader of ['alive', 'exited'] as const) {
    test(`process/terminate kills a double-forked descendant re-parented to init that still holds the ${tty ? 'terminal' : 'stdout pipe'} (leader ${leader})`, async () => {
      const c = await connectClient(server);
      const id = `p-${tty}-${leader}`;
      const pidFile = path.join(dir, id);
      // The leader that exits waits for the orphan's own session first (else a terminal's hang-up reaches it).
      const orphan = `setsid -f sh -c 'echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 300'`;
      const script = `echo leader=$$; ${orphan}; ${leader === 'alive' ? 'sleep 300' : `until [ -e ${pidFile} ]; do sleep 0.05; done; echo leader-done`}`;
      await c.call('process/start', startParams(id, ['/bin/sh', '-c', script], { tty }));
      await waitFor(() => existsSync(pidFile) && /leader=\d+/.test(c.sink.outputText(id)), { what: 'the orphan to start', detail: () => `${existsSync(pidFile)} ${JSON.stringify(c.sink.outputText(id))}` });
      const escaped = Number(readFileSync(pidFile, 'utf8'));
      leftovers.push(escaped);
      assert.ok(isAlive(escaped));
      const leaderPid = Number(/leader=(\d+)/.exec(c.sink.outputText(id))?.[1]);
      assert.ok(leaderPid > 0 && ppidOf(escaped) !== leaderPid, 'the orphan is no child of the leader (re-parented)');
      if (leader === 'exited') await waitFor(() => c.sink.outputText(id).includes('leader-done'), { what: 'the leader to finish' });
      await c.call('process/terminate', { processId: id });
      // Before: the orphan lived on, and with the leader gone the process never closed.
      await waitFor(() => !isAlive(escaped), { what: `the orphan ${escaped} to be killed`, timeout: 5_000 });
      await waitFor(() => c.sink.closed(id), { what: `${id} to close`, timeout: 5_000 });
      c.conn.close();
    });
  }
}
