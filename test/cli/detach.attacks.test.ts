// `exec-server --detach` under attack on a shared host. A detached server that died (SIGKILL, a
// crash — or, before the fix, its idle exit) left its run record behind; another local user binds
// the recorded port and answers GET /readyz. If --detach trusts the record, it prints the dead
// server's token and port and the client (Connect to Host through `ssh -W`) then sends its token,
// keystrokes, file writes and process starts to the squatter. Each test is the attack: the
// squatter (a node http server) logs every websocket upgrade it receives; the client connects
// where --detach said, as Connect to Host does, and must reach a real exec-server of this user.
// "Another user" is uid 65534 (a child spawned with uid/gid 65534); the dead server's pid being
// held by someone else (pid recycling, which a local attacker can force by forking until it gets
// it) is simulated by writing that pid into the record.
// The test marked "held" passed on the code before the fix too (kept as a guard). Attack 4 is the
// other side: a foreign listener that cannot receive the client's connection (IPv6-only on [::])
// must not make --detach give up the live server.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { readRunRecord, runPaths, type RunRecord } from '../../src/cli/detach';
import { listenerHeldBy } from '../../src/transports/detach-proof';
import { cliPath } from '../support/cli';
import { cmdline, descendants, isAlive } from '../support/process';
import { tempDir } from '../support/tmp';
import { waitFor } from '../support/wait';
import { killSquatters, squat, type Squatter } from '../support/detach-squatter';

const run = promisify(execFile);
const work = tempDir('cli-detach-attack-');
const children = new Set<ChildProcess>();
const servers = new Set<number>();
after(() => {
  killSquatters();
  for (const c of children) c.kill('SIGKILL');
  for (const pid of servers) if (isAlive(pid)) process.kill(pid, 'SIGTERM');
});

interface Answer extends RunRecord {
  started: boolean;
}

async function detach(home: string, extra: string[] = []): Promise<Answer> {
  const r = await run(process.execPath, [cliPath, '--detach', ...extra], { env: { ...process.env, HOME: home }, encoding: 'utf8', timeout: 60_000 });
  const a = JSON.parse(r.stdout) as Answer;
  servers.add(a.pid);
  return a;
}

async function until(what: string, cond: () => boolean, ms = 15_000): Promise<void> {
  await waitFor(cond, { what, timeout: ms, interval: 50 });
}

/**
 * A detached server that died leaving its record: started by --detach, then SIGKILLed (no
 * exit path of it runs) — its sentinel first, which would otherwise remove the record
 * (src/cli/sentinel.ts; both killed at once: a user's `kill -9 -1`, the OOM killer twice).
 * Returns its record as it was.
 */
async function deadServerRecord(home: string): Promise<RunRecord> {
  mkdirSync(home, { recursive: true });
  const first = await detach(home);
  assert.equal(first.started, true);
  const sentinel = await waitFor(() => descendants(first.pid).find((p) => cmdline(p.pid).includes('--sentinel-of'))?.pid, { what: 'the sentinel of the first server' });
  process.kill(sentinel, 'SIGKILL');
  await until('the sentinel to die', () => !isAlive(sentinel));
  process.kill(first.pid, 'SIGKILL');
  await until('the first server to die', () => !isAlive(first.pid));
  const rec = readRunRecord(runPaths(home).record);
  assert.ok(rec, 'a SIGKILLed server cannot remove its record: it is left behind');
  return rec;
}

/** The record's pid replaced (the dead server's pid now held by `pid`). */
function recyclePid(home: string, rec: RunRecord, pid: number): void {
  writeFileSync(runPaths(home).record, JSON.stringify({ ...rec, pid }) + '\n', { mode: 0o600 });
}

/** What the client does with --detach's answer: a websocket upgrade with the token, kept `holdMs`. Resolves whether it was accepted. */
function connectAsClient(a: Answer, holdMs = 0): Promise<boolean> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${a.port}/`, { headers: { Authorization: `Bearer ${a.token}` } });
    ws.on('open', () => {
      setTimeout(() => {
        ws.close();
        resolve(true);
      }, holdMs);
    });
    ws.on('error', () => resolve(false));
  });
}

/** --detach must have started a fresh server of this user and the client must reach it; the squatter sees no upgrade. */
async function assertNotFooled(home: string, stale: RunRecord, squatter: Squatter, a: Answer): Promise<void> {
  const accepted = await connectAsClient(a);
  assert.doesNotMatch(squatter.log(), /UPGRADE/, `the squatter received the client's websocket upgrade (token ${squatter.log().includes(stale.token) ? 'included' : 'absent'})`);
  assert.notEqual(a.token, stale.token, 'the dead server\'s token was handed out again');
  assert.equal(a.started, true, 'a fresh server is started');
  assert.notEqual(a.port, squatter.port);
  assert.ok(accepted, 'the client reaches the new server');
  assert.equal(listenerHeldBy(a.port, a.pid), 'yes', 'the printed port is held by the printed pid');
  assert.equal(readRunRecord(runPaths(home).record)?.pid, a.pid, 'the record names the new server');
}

/** A listener of another user needs root to start (setuid); without it these are skipped (reported, never a pass). */
const asOtherUser = process.getuid?.() === 0 ? {} : { skip: 'needs root: the squatter runs as another user (uid 65534)' };

describe('exec-server --detach: a stale run record and a squatter on its port', () => {
  it('attack 1: another user (uid 65534) binds the dead server\'s port and holds its pid → not trusted', asOtherUser, async () => {
    const home = path.join(work, 'other-user');
    const stale = await deadServerRecord(home);
    const squatter = await squat(stale.port, 65534);
    recyclePid(home, stale, squatter.pid);
    assert.equal(listenerHeldBy(stale.port, squatter.pid), 'no', '/proc: the listener belongs to another uid');
    const a = await detach(home);
    await assertNotFooled(home, stale, squatter, a);
  });

  it('attack 2: the dead server\'s pid recycled by an unrelated process of this user, another user on the port → not trusted', asOtherUser, async () => {
    const home = path.join(work, 'recycled');
    const stale = await deadServerRecord(home);
    const squatter = await squat(stale.port, 65534);
    const unrelated = spawn('sleep', ['300'], { stdio: 'ignore' });
    children.add(unrelated);
    recyclePid(home, stale, unrelated.pid!);
    assert.equal(listenerHeldBy(stale.port, unrelated.pid!), 'no', '/proc: the listener is not among the pid\'s descriptors');
    const a = await detach(home);
    await assertNotFooled(home, stale, squatter, a);
  });

  it('attack 3: a listener of this same user that answers /readyz but is not the server (cannot prove the token) → not trusted', async () => {
    const home = path.join(work, 'same-user');
    const stale = await deadServerRecord(home);
    const squatter = await squat(stale.port);
    recyclePid(home, stale, squatter.pid);
    // /proc cannot tell this one apart (same uid, the pid holds the socket): only the proof can.
    assert.equal(listenerHeldBy(stale.port, squatter.pid), 'yes');
    const a = await detach(home);
    await assertNotFooled(home, stale, squatter, a);
    // It was asked for a proof and could not give one; it never saw the token.
    assert.doesNotMatch(squatter.log(), new RegExp(stale.token.replace(/[^A-Za-z0-9]/g, '.')));
  });

  it('attack 4: another user (uid 65534) listens IPv6-only on [::] at the live server\'s port → the live server is still found, the squatter gets nothing', asOtherUser, async () => {
    const home = path.join(work, 'ipv6-squatter');
    mkdirSync(home);
    const a = await detach(home);
    // A [::] listener that is IPv6-only coexists with 127.0.0.1:PORT and never receives a
    // connection to it: it says nothing about the server there.
    const squatter = await squat(a.port, 65534, '::');
    const b = await detach(home);
    // Before: the foreign socket on the port made the live server untrusted and a new one was
    // started (the user's detached sessions left behind with the old one).
    assert.equal(b.started, false, 'the live server is found again, not replaced');
    assert.deepEqual({ ...b, started: true }, a);
    assert.ok(await connectAsClient(b), 'the client reaches it');
    assert.doesNotMatch(squatter.log(), /REQUEST|UPGRADE/, 'the squatter received nothing');
  });

  it('the real server is still found (started: false), and each --detach that vouches for it restarts its idle time', async () => {
    const home = path.join(work, 'reuse');
    mkdirSync(home);
    const a = await detach(home, ['--idle-exit', '5']);
    assert.ok(await connectAsClient(a, 2500), 'a client came and went: 5 s from now it would idle out');
    // --detach after --detach for 9 s, none connecting: each one's proof counts as activity, so
    // the client it vouched to would still find the server (before: it exited 5 s after the client).
    // The gap between two proofs is one --detach's run (well under a second; 5 s of margin for a loaded machine).
    const deadline = Date.now() + 9000;
    while (Date.now() < deadline) {
      const b = await detach(home, ['--idle-exit', '5']);
      assert.deepEqual({ ...b, started: true }, a, 'the same server, found again');
      assert.equal(b.started, false);
    }
  });
});

describe('exec-server --detach: the server removes its run record when it exits', () => {
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    it(`on ${sig}`, async () => {
      const home = path.join(work, `sig-${sig}`);
      mkdirSync(home);
      const a = await detach(home);
      process.kill(a.pid, sig);
      await until('the server to exit', () => !isAlive(a.pid));
      assert.equal(existsSync(runPaths(home).record), false, readFileSync(runPaths(home).log, 'utf8'));
    });
  }

  it('on its idle exit (after a client came and went)', async () => {
    const home = path.join(work, 'idle');
    mkdirSync(home);
    const a = await detach(home, ['--idle-exit', '1']);
    // Connected across the server's 1 s idle check, so it counts as served (the 30 s first-connect
    // grace ends; were a check missed on a loaded machine, the grace only makes the wait longer).
    assert.ok(await connectAsClient(a, 2500));
    // Someone else asking for proofs (they cannot make the client half) does not keep it alive.
    let refused = 0;
    const poll = setInterval(() => {
      http.get({ host: '127.0.0.1', port: a.port, path: `/detach-proof?nonce=${'ab'.repeat(32)}`, headers: { 'x-exec-server-detach-proof': 'f'.repeat(64) } }, (res) => {
        if (res.statusCode === 401) refused++;
        res.resume();
      }).on('error', () => undefined);
    }, 200);
    try {
      await until('the idle exit', () => !isAlive(a.pid), 60_000);
    } finally {
      clearInterval(poll);
    }
    assert.ok(refused > 0, 'the forged proof requests were refused');
    assert.match(readFileSync(runPaths(home).log, 'utf8'), /--idle-exit/);
    assert.equal(existsSync(runPaths(home).record), false, 'the record is gone');
  });

  it('held: but not a record that names another server (a newer one replaced it)', async () => {
    const home = path.join(work, 'replaced');
    mkdirSync(home);
    const a = await detach(home);
    // Its watcher (checked every second) has seen the record name it once (it logs so).
    await until('the watcher to see its record', () => /names this server/.test(readFileSync(runPaths(home).log, 'utf8')));
    // Both the exit path and the watcher (which stops a server its record no longer names) must leave it.
    const other = { ...readRunRecord(runPaths(home).record)!, pid: process.pid };
    writeFileSync(runPaths(home).record, JSON.stringify(other) + '\n', { mode: 0o600 });
    await until('the server to exit (unreachable)', () => !isAlive(a.pid), 90_000);
    assert.deepEqual(readRunRecord(runPaths(home).record), other);
  });
});
