// The shared test helpers do what test/README.md promises: waitFor's result and timeout message,
// isAlive's one meaning (a zombie is dead), the launcher's URL and cleanup, tempDir's cleanup.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { Emitter } from '../../src/rpc/event';
import { startCli } from './cli';
import { isAlive, procState, spawnTied } from './process';
import { removeTempDir, tempDir } from './tmp';
import { waitFor } from './wait';

test('waitFor: resolves with the predicate’s value (sync or async); times out naming what and the detail', async () => {
  let n = 0;
  assert.equal(await waitFor(() => ++n >= 3 && `n=${n}`), 'n=3');
  assert.equal(await waitFor(async () => 'async'), 'async');
  const t0 = Date.now();
  await assert.rejects(waitFor(() => false, { timeout: 50, what: 'the moon', detail: () => 'saw nothing' }), {
    message: 'timed out after 50 ms waiting for the moon; saw nothing',
  });
  // It waited for its timeout rather than rejecting at once. Not >= 50: a timer counts from the
  // event loop's cached clock, which lags Date.now() by however long this process was descheduled
  // (several ms with busy neighbours), so a 50 ms timer can end 40-odd ms after t0.
  assert.ok(Date.now() - t0 >= 25, `rejected ${Date.now() - t0} ms after the start of a 50 ms wait`);
  await assert.rejects(waitFor(() => {
    throw new Error('predicate broke');
  }), /predicate broke/);
});

test('waitFor: events (src/rpc Event with a filter, Node EventEmitter); wake re-checks at once', async () => {
  const em = new Emitter<number>();
  const got = waitFor({ event: em.event, where: (x) => x > 1 }, { what: 'x > 1' });
  em.fire(1);
  em.fire(2);
  assert.equal(await got, 2);
  assert.equal(em.hasListeners, false, 'unsubscribed once resolved');
  const node = new EventEmitter();
  const exit = waitFor({ emitter: node, name: 'exit' });
  node.emit('exit', 7);
  assert.equal(await exit, 7);
  assert.equal(node.listenerCount('exit'), 0);
  // With a huge interval, only `wake` can make the check happen in time.
  let flag = false;
  const woken = waitFor(() => flag, { interval: 60_000, timeout: 2_000, wake: em.event });
  flag = true;
  em.fire(0);
  await woken;
});

test('isAlive: a running process is alive; a zombie (exited, not reaped) and a gone pid are not', async () => {
  // `sleep 0.2` is a child of the shell, which then becomes `sleep 30` and never reaps it: a zombie.
  const sh = spawn('/bin/sh', ['-c', 'sleep 0.2 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    let out = '';
    sh.stdout.on('data', (d) => (out += d));
    const zombie = await waitFor(() => /^\d+\n/.test(out) && Number(out));
    await waitFor(() => procState(zombie) === 'Z', { what: `pid ${zombie} to be a zombie` });
    assert.equal(isAlive(zombie), false, 'a zombie counts as dead');
    assert.doesNotThrow(() => process.kill(zombie, 0), 'signal 0 would call it alive: that is why isAlive reads /proc');
    assert.equal(isAlive(sh.pid!), true);
  } finally {
    sh.kill('SIGKILL');
  }
  await waitFor({ emitter: sh, name: 'exit' }).catch(() => undefined);
  await waitFor(() => !isAlive(sh.pid!), { what: 'the killed shell to be gone' });
  assert.equal(procState(2 ** 22 + 1), undefined, 'no such pid');
});

test('startCli: resolves with the bound URL; the server is stopped when its test ends', async (t) => {
  let pid = 0;
  await t.test('inner test owning the server', async (inner) => {
    const cli = await startCli([], { t: inner });
    assert.match(cli.url, /^ws:\/\/127\.0\.0\.1:\d+$/);
    pid = cli.pid;
    assert.equal(isAlive(pid), true);
  });
  await waitFor(() => !isAlive(pid), { what: `CLI ${pid} stopped after its test`, timeout: 10_000 });
  await assert.rejects(startCli(['--bogus']), /exited \(2\) before printing its URL; stderr: .*unknown argument: --bogus/s);
});

test('tempDir: removed when its test ends; removeTempDir removes at once', async (t) => {
  let dir = '';
  await t.test('inner test owning the directory', (inner) => {
    dir = tempDir('support-test-', { t: inner });
    writeFileSync(path.join(dir, 'f'), 'x');
  });
  assert.equal(existsSync(dir), false);
  const now = tempDir('support-test-');
  removeTempDir(now);
  assert.equal(existsSync(now), false);
});

test('spawnTied: a helper dies with the test process even when that is SIGKILLed (no t.after runs)', async () => {
  // A stand-in for a test file killed at its timeout: a node process that starts a tied helper
  // (plain spawn here left the helper running: the leak of the symlink-race tests).
  const mod = path.join(__dirname, 'process.js');
  const code = `const { spawnTied } = require(${JSON.stringify(mod)}); const h = spawnTied('sleep', ['300'], { stdio: 'ignore' }); console.log(h.pid); setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  parent.stdout!.on('data', (d) => (out += d));
  const helper = await waitFor(() => /^\d+\n/.test(out) && Number(out), { what: 'the helper pid' });
  assert.ok(isAlive(helper));
  parent.kill('SIGKILL');
  try {
    await waitFor(() => !isAlive(helper), { timeout: 5_000, what: 'the helper to die with its parent' });
  } finally {
    if (isAlive(helper)) process.kill(helper, 'SIGKILL');
  }
});
