// The CLI under Node's profiling flags. V8 opens its logs (--prof: isolate-0x…-<pid>-v8.log;
// --perf-basic-prof: /tmp/perf-<pid>.map) without close-on-exec, and the CLI closes inherited
// descriptors lacking it at startup (src/server/inherited-fds.ts). It closed V8's too: V8 kept
// writing its log lines to the numbers, which the next pipe and socket got. The server died at
// once (ECONNRESET on the sandbox probe's pipe) or sent its clients frames with V8's text in
// them. Both tests failed so on the old code. The last test: no other file is taken for V8's log
// (test/server/inherited-fds.attacks.test.ts still shows an inherited descriptor closed).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { isOwnV8Log } from '../../src/server/inherited-fds';
import { openRpc, type RawRpc } from '../support/cli-servers';
import { startCli, stopAll, type ServerProcess } from '../support/cli';
import { tempDir } from '../support/tmp';

after(stopAll);

/** 600 requests (sequential and pipelined), and a process whose output comes back whole. */
async function exercise(server: ServerProcess, rpc: RawRpc, dir: string): Promise<void> {
  const target = path.join(dir, 'file.txt');
  fs.writeFileSync(target, 'x');
  for (let i = 0; i < 100; i++) {
    const r = await rpc.call('fs/getMetadata', { path: `file://${target}` });
    assert.ok(r.result, JSON.stringify(r));
  }
  const batch = await Promise.all(Array.from({ length: 500 }, () => rpc.call('fs/getMetadata', { path: `file://${target}` })));
  assert.ok(batch.every((r) => r.result), 'every pipelined request answered');
  const start = await rpc.call('process/start', { processId: 'p1', argv: ['sh', '-c', 'seq 1 20000'], cwd: `file://${dir}`, env: { PATH: '/usr/bin:/bin' }, tty: false });
  assert.ok(start.result, JSON.stringify(start));
  const out = await rpc.readOutput('p1');
  const expected = spawnSync('seq', ['1', '20000'], { encoding: 'utf8' }).stdout;
  assert.equal(out, expected, 'the output came back whole, with nothing of V8 in it');
  assert.equal(server.child.exitCode, null, `the server is still running; stderr: ${server.stderr()}`);
  assert.doesNotMatch(server.stderr(), /fatal/);
}

for (const flag of ['--perf-basic-prof', '--prof']) {
  test(`the CLI started with node ${flag} serves requests and processes; V8's log stays V8's`, async (t) => {
    const dir = tempDir('cli-prof-', { t });
    const server = await startCli([], { t, cwd: dir, nodeArgs: [flag] });
    const rpc = await openRpc(server.url);
    await exercise(server, rpc, dir);
    rpc.ws.close();
    await server.stop();
    const log = flag === '--prof' ? path.join(dir, fs.readdirSync(dir).find((f) => /^isolate-0x[0-9a-f]+-\d+-v8\.log$/.test(f)) ?? 'missing') : path.join(os.tmpdir(), `perf-${server.pid}.map`);
    try {
      const text = fs.readFileSync(log, 'utf8');
      assert.ok(text.length > 1000, `${log} holds V8's log`);
      // (--prof's log names code, fs/getMetadata among it: a message or the output is what must not be there.)
      assert.doesNotMatch(text, /\{"id":\d|"result":\{|\n19998\n19999\n/, "nothing of the server's traffic went into V8's log");
    } finally {
      fs.rmSync(log, { force: true });
    }
  });
}

test('isOwnV8Log: V8 logs of this pid only; an inherited descriptor to any other file is not one', () => {
  assert.equal(isOwnV8Log('/tmp/perf-123.map', 123), true);
  assert.equal(isOwnV8Log('/tmp/jit-123.dump', 123), true);
  assert.equal(isOwnV8Log('/work/isolate-0x5a1c2d0-123-v8.log', 123), true);
  assert.equal(isOwnV8Log('/work/v8.log', 123, ['--prof', '--logfile=v8.log']), true);
  assert.equal(isOwnV8Log('/tmp/perf-124.map', 123), false, "another process's map");
  assert.equal(isOwnV8Log('/work/isolate-0x5a1c2d0-1234-v8.log', 123), false);
  assert.equal(isOwnV8Log('/home/user/.ssh', 123), false);
  assert.equal(isOwnV8Log('/work/v8.log', 123), false, 'no --logfile given');
});
