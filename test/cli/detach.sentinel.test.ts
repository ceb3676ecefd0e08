// A detached server (`exec-server --detach`) that is SIGKILLed or crashes: its sentinel
// (src/cli/sentinel.ts) kills every process tree the server started — a pipe child, a PTY child,
// a grandchild in the child's group and one that called setsid — and removes the run record if it
// still names the dead server; the next --detach right after the kill keeps its own record; a
// server that exits cleanly (idle) takes its sentinel with it. Before the sentinel, all four
// processes of the first test outlived the server (checked on the code before the fix).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { readRunRecord, runPaths, type DetachAnswer } from '../../src/cli/detach';
import { connectWebSocket } from '../../src/client/connect';
import { cliPath } from '../support/cli';
import { cmdline, descendants, isAlive, procInfo } from '../support/process';
import { tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';

const run = promisify(execFile);
const work = tempDir('cli-detach-sentinel-');
/** Every process a test saw, killed at the end whatever happened (the old code left them all). */
const seen = new Set<number>();
after(() => {
  for (const pid of seen) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
});

async function detach(home: string, extra: string[] = []): Promise<DetachAnswer> {
  const r = await run(process.execPath, [cliPath, '--detach', ...extra], { env: { ...process.env, HOME: home }, encoding: 'utf8', timeout: 60_000 });
  const a = JSON.parse(r.stdout) as DetachAnswer;
  seen.add(a.pid);
  return a;
}

const isSentinel = (pid: number) => cmdline(pid).includes('--sentinel-of');
const sentinelOf = (server: number) => descendants(server).find((p) => isSentinel(p.pid))?.pid;
const log = (home: string) => (existsSync(runPaths(home).log) ? readFileSync(runPaths(home).log, 'utf8') : '');

/**
 * A detached server running a pipe child (a grandchild in its group, one in a session of its
 * own by setsid) and a PTY child (a grandchild in its group). Returns the server and every
 * process of those trees.
 */
async function serverWithChildren(home: string): Promise<{ server: DetachAnswer; tree: number[] }> {
  mkdirSync(home, { recursive: true });
  const server = await detach(home);
  const client = await connectWebSocket(`ws://127.0.0.1:${server.port}/`, { reconnect: false, token: server.token });
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  await client.startProcess({ argv: ['/bin/sh', '-c', 'setsid sleep 1001 & sleep 1002 & wait'], cwd: home, env });
  await client.startProcess({ argv: ['/bin/sh', '-c', 'sleep 1003 & sleep 1004; wait'], cwd: home, env, tty: true });
  const sleeps = () => descendants(server.pid).filter((p) => p.comm === 'sleep' && / 100[1-4]$/.test(cmdline(p.pid)));
  await waitFor(() => sleeps().length === 4, { what: 'the four sleeps to run', detail: () => JSON.stringify(descendants(server.pid)) });
  const tree = descendants(server.pid).filter((p) => !isSentinel(p.pid));
  for (const p of tree) seen.add(p.pid);
  const own = sleeps().find((p) => cmdline(p.pid).endsWith('1001'))!;
  assert.equal(procInfo(own.pid)?.pgrp, own.pid, 'the setsid sleep leads a group (and session) of its own');
  const shells = tree.filter((p) => p.comm === 'sh');
  assert.equal(shells.length, 2);
  for (const s of shells) assert.ok(tree.some((p) => p.pgrp === s.pid && p.pid !== s.pid), `a grandchild in the group of ${s.pid}`);
  // The connection is dropped, not closed: the session (and its processes) stays for its TTL.
  await client.close();
  return { server, tree: tree.map((p) => p.pid) };
}

describe('exec-server --detach: a server that dies without exiting cleanly', () => {
  it('SIGKILLed: every process it started is gone within seconds and its run record is removed', { timeout: 90_000 }, async () => {
    const home = path.join(work, 'killed');
    const { server, tree } = await serverWithChildren(home);
    const sentinel = sentinelOf(server.pid);
    if (sentinel) seen.add(sentinel);
    process.kill(server.pid, 'SIGKILL');
    await waitFor(() => tree.every((p) => !isAlive(p)), { what: "the dead server's processes to be killed", timeout: 10_000, detail: () => `alive: ${tree.filter(isAlive).map((p) => `${p} ${cmdline(p)}`).join('; ')}` });
    await waitFor(() => !existsSync(runPaths(home).record), { what: 'the run record to be removed', timeout: 10_000 });
    await waitFor(() => sentinel !== undefined && !isAlive(sentinel), { what: 'the sentinel to exit', timeout: 10_000 });
    assert.match(log(home), new RegExp(`sentinel: server pid ${server.pid} ended without a clean exit: killed [12] of 2 process trees`));
  });

  it('SIGKILLed and --detach at once: the new server keeps its record, the old processes are gone', { timeout: 90_000 }, async () => {
    const home = path.join(work, 'restart');
    const { server, tree } = await serverWithChildren(home);
    const sentinel = sentinelOf(server.pid)!;
    assert.ok(sentinel, 'the server has a sentinel');
    seen.add(sentinel);
    process.kill(server.pid, 'SIGKILL');
    const next = await detach(home);
    assert.equal(next.started, true);
    await waitFor(() => tree.every((p) => !isAlive(p)) && !isAlive(sentinel), { what: "the old server's processes and sentinel to be gone", timeout: 10_000 });
    assert.equal(readRunRecord(runPaths(home).record)?.pid, next.pid, 'the record names the new server');
    assert.deepEqual(readdirSync(runPaths(home).dir).filter((n) => /lock|token-|tmp-/.test(n)), []);
    process.kill(next.pid, 'SIGTERM');
  });

  it('an idle exit is clean: the sentinel exits with the server and kills nothing', { timeout: 90_000 }, async () => {
    const home = path.join(work, 'idle');
    mkdirSync(home);
    const server = await detach(home, ['--idle-exit', '1', '--session-ttl', '1']);
    const sentinel = await waitFor(() => sentinelOf(server.pid), { what: 'the sentinel to start' });
    seen.add(sentinel);
    const client = await connectWebSocket(`ws://127.0.0.1:${server.port}/`, { reconnect: false, token: server.token });
    await client.startProcess({ argv: ['/bin/sleep', '600'], cwd: home, env: {} });
    await client.close();
    await waitFor(() => !isAlive(server.pid) && !isAlive(sentinel), { what: 'the server and its sentinel to exit', timeout: 60_000, detail: () => log(home).slice(-800) });
    assert.doesNotMatch(log(home), /without a clean exit/);
    assert.equal(existsSync(runPaths(home).record), false);
  });
});
