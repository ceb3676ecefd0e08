// Attacks on the relay of a remote environment's agent endpoint: paths judged on the host, not
// here; fs/readFile's size bound measured on the host; pipelined requests; other agents' and other environments' processes (a hostile host
// itself: relay.hostile-host.test.ts).
import { strict as assert } from 'node:assert';
import { existsSync, realpathSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { workspaceOnlySandbox } from '../../../src/extension/agent/confine';
import { waitFor } from '../../support/wait';
import { closedOf, endpointFor, outputOf, outside, sshTarget, start, useSshd, ws } from './relay-helpers';

useSshd();

describe('agent endpoint relay: attacks', () => {
  it('attack: a folder inside the workspace here but a symlink out on the host is outside (resolved on the host)', async () => {
    assert.ok(realpathSync(path.join(ws, 'link')).startsWith(ws + path.sep), 'precondition: inside on this machine');
    const f = await endpointFor(sshTarget('twisted'), { sandboxAll: false });
    try {
      const a = await f.agent();
      await a.handshake();
      // A sandbox that may write ws/link only: inside the workspace here, /outside on the host.
      const sandbox = await workspaceOnlySandbox([path.join(ws, 'link')]);
      const r = await a.send('process/start', { ...start('esc', ['/bin/sh', '-c', `echo pwned > ${path.join(ws, 'link', 'escaped')}`]), sandbox });
      assert.match(r.error?.message ?? '', /not approved/, `the start was asked (and denied): ${JSON.stringify(r)}`);
      assert.equal(f.questions.length, 1);
      assert.match(f.questions[0].message, /sandbox writes outside the workspace/);
      const w = await a.send('fs/writeFile', { path: pathToFileURL(path.join(ws, 'link', 'escaped-fs')).href, dataBase64: Buffer.from('pwned').toString('base64') });
      assert.match(w.error?.message ?? '', /not approved/, 'a path request on a remote endpoint is asked');
      assert.equal(f.questions.length, 2);
      assert.ok(!existsSync(path.join(outside, 'escaped')) && !existsSync(path.join(outside, 'escaped-fs')), 'nothing written outside');
    } finally {
      await f.stop();
    }
  });

  it("attack: fs/readFile of a file over the agent bound is refused by the host's size, not this machine's", async () => {
    // On the twisted host ws/link/big is a 40 MiB file; here ws/link is an empty folder, so a
    // size looked up on this machine finds nothing and the whole file would be read.
    const big = path.join(outside, 'big');
    writeFileSync(big, '');
    truncateSync(big, 40 * 1024 * 1024);
    assert.ok(!existsSync(path.join(ws, 'link', 'big')), 'precondition: no such file here');
    const f = await endpointFor(sshTarget('twisted'), { sandboxAll: false, answer: 'Allow' });
    try {
      const a = await f.agent();
      await a.handshake();
      const r = await a.send('fs/readFile', { path: pathToFileURL(path.join(ws, 'link', 'big')).href });
      assert.match(r.error?.message ?? '', /file is larger than 33554432 bytes/, JSON.stringify(r).slice(0, 300));
      const small = await a.send('fs/readFile', { path: pathToFileURL(path.join(ws, 'link', 'missing')).href });
      assert.ok(small.error && !/larger than/.test(small.error.message), "a missing file keeps the host's own error");
    } finally {
      await f.stop();
      rmSync(big, { force: true });
    }
  });

  it('attack: requests pipelined before the host connection is up are gated and kept in order', async () => {
    const marker = path.join(ws, 'pipelined');
    const f = await endpointFor(sshTarget('devbox'), { sandboxAll: false });
    try {
      const a = await f.agent();
      const replies = [
        a.send('initialize', { clientName: 'pipeliner' }),
        (a.notify('initialized', {}), a.send('process/start', start('pp', ['/bin/sh', '-c', `echo ran > ${marker}`]))),
        a.send('process/read', { processId: 'someone-elses', afterSeq: 0, waitMs: 0 }),
        a.send('environment/info', {}),
      ];
      const [init, started, read, info] = await Promise.all(replies);
      assert.ok(init.result, JSON.stringify(init.error));
      assert.match(started.error?.message ?? '', /not approved/);
      assert.match(read.error?.message ?? '', /not started by this connection/);
      assert.ok(info.result, 'a free request after them still reaches the host');
      assert.equal(f.questions.length, 1);
      assert.ok(!existsSync(marker));
    } finally {
      await f.stop();
    }
  });

  it("attack: an agent of one endpoint cannot reach another environment's (or another agent's) processes", async () => {
    const f1 = await endpointFor(sshTarget('devbox', 'devbox'), { sandboxAll: true });
    const f2 = await endpointFor(sshTarget('devbox', 'other'), { sandboxAll: true });
    try {
      const a1 = await f1.agent();
      await a1.handshake();
      const r = await a1.send('process/start', { ...start('victim', ['/bin/sh', '-c', 'echo victim-out; sleep 300']), pipeStdin: true });
      assert.ok(r.result, JSON.stringify(r.error));
      await waitFor(() => outputOf(a1, 'victim').includes('victim-out'), { timeout: 30_000, what: 'victim output' });
      const a2 = await f2.agent();
      await a2.handshake();
      for (const [m, p] of [
        ['process/read', { processId: 'victim', afterSeq: 0, waitMs: 0 }],
        ['process/write', { processId: 'victim', chunk: Buffer.from('x').toString('base64'), writeId: 'w1' }],
        ['process/terminate', { processId: 'victim' }],
      ] as const) {
        const x = await a2.send(m, p);
        assert.match(x.error?.message ?? '', /not started by this connection/, m);
      }
      // Its own process of the same id is a process of its own host session, not the victim.
      const own = await a2.send('process/start', start('victim', ['/bin/sh', '-c', 'echo mine']));
      assert.ok(own.result, JSON.stringify(own.error));
      await waitFor(() => closedOf(a2, 'victim'), { timeout: 30_000, what: 'own process closed' });
      assert.equal(outputOf(a2, 'victim'), 'mine\n');
      assert.ok(!closedOf(a1, 'victim') && !outputOf(a1, 'victim').includes('mine'), 'the victim runs on, unseen by the other agent');
      await a1.send('process/terminate', { processId: 'victim' });
    } finally {
      await f1.stop();
      await f2.stop();
    }
  });
});
