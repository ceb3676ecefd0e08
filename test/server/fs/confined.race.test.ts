// fs/* under a managed sandbox against a racing process (src/server/fs/confined.ts): a
// sandboxed command may write inside its writable root while the agent's fs/* requests run,
// so it can swap a directory on the requested path for a symlink between the engine's check
// and its use. Each test is that attack: a child process flips R/flip between a real directory
// and a link to a place the sandbox forbids (a `none` directory for reads, a read-only one for
// changes) as fast as renames go, while one fs method runs many times through R/flip; nothing
// outside may ever be read or changed. Each test also asserts that some calls succeeded
// through the real directory, so the race was live. (The check-then-use code read the secret
// and changed the read-only directory within these loops; see the commit message.)
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { managedSandbox, pathEntry, workspaceWriteEntries } from '../../../src/protocol/codex-sandbox';
import { b64, serverWithTmpDir, uri, unb64, type Client } from '../../support/server';

const ROUNDS = 1500;
/** A race stops earlier after this long: on a loaded machine its 11 races stay within the file's 120 s (one took 67 s of 1500 rounds). */
const RACE_MS = 7_000;
const SECRET = 'top secret';
const INSIDE = 'inside';

let c: Client;
let dir: string;
let close: () => Promise<void>;
let R: string; // the writable root the racing process writes in
let O: string; // read-only for the sandbox
let S: string; // access none

before(async () => {
  ({ c, dir, close } = await serverWithTmpDir());
  R = path.join(dir, 'root');
  O = path.join(dir, 'readonly');
  S = path.join(dir, 'secret');
  for (const d of [R, O, S]) fs.mkdirSync(d);
});
after(() => close());

function sandbox() {
  return managedSandbox({
    entries: [...workspaceWriteEntries({ slashTmp: false, protectedSubpaths: [] }), pathEntry(uri(S), 'none')],
    cwd: uri(R),
    workspaceRoots: [uri(R)],
  });
}

/** Fresh contents for O and S: `f` (+ `sub/g`) in each, told apart by their text; S also holds `only-in-secret`. */
function resetOutside(): void {
  for (const [d, text] of [
    [O, 'original'],
    [S, SECRET],
  ] as const) {
    fs.rmSync(d, { recursive: true, force: true });
    fs.mkdirSync(path.join(d, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(d, 'f'), text);
    fs.writeFileSync(path.join(d, 'sub', 'g'), text);
  }
  fs.writeFileSync(path.join(S, 'only-in-secret'), SECRET);
}

/** A snapshot of a tree (names and contents) to compare before/after. */
function snapshot(d: string): string {
  const out: string[] = [];
  const walk = (p: string, rel: string) => {
    for (const name of fs.readdirSync(p).sort()) {
      const full = path.join(p, name);
      const st = fs.lstatSync(full);
      if (st.isDirectory()) walk(full, `${rel}${name}/`);
      else out.push(`${rel}${name}=${fs.readFileSync(full, 'utf8')}`);
    }
  };
  walk(d, '');
  return out.join('\n');
}

/**
 * The racing process: R/flip is, in turn, a real directory (holding `f` and `sub/g` with
 * INSIDE, put back whenever a call removed them) and a symlink to `target`. Each swap is two
 * renames (the directory steps aside as R/real, the link steps in from R/lnk, and back), so
 * R/flip is missing only between them and spends about as long as either.
 */
function flipper(target: string): ChildProcess {
  const script = `
    const fs = require('fs');
    process.chdir(process.argv[1]);
    fs.mkdirSync('flip/sub', { recursive: true });
    fs.symlinkSync(process.argv[2], 'lnk');
    const refill = () => {
      try { fs.mkdirSync('real/sub', { recursive: true }); } catch {}
      for (const f of ['real/f', 'real/sub/g']) { try { fs.writeFileSync(f, '${INSIDE}', { flag: 'wx' }); } catch {} }
    };
    for (;;) {
      try { fs.renameSync('flip', 'real'); fs.renameSync('lnk', 'flip'); } catch {}
      refill(); // while the directory is R/real: never through the link
      try { fs.renameSync('flip', 'lnk'); fs.renameSync('real', 'flip'); } catch {}
      for (let i = 0; i < 200; i++); // about as long as the refill
    }`;
  return spawn(process.execPath, ['-e', script, R, target], { stdio: 'ignore' });
}

/** Runs `call(i)` ROUNDS times (or for RACE_MS) while R/flip flips to `target`; returns the results of the calls that succeeded. */
async function race<T>(target: string, call: (i: number) => Promise<T>): Promise<T[]> {
  resetOutside();
  for (const name of fs.readdirSync(R)) fs.rmSync(path.join(R, name), { recursive: true, force: true });
  const child = flipper(target);
  const ok: T[] = [];
  try {
    // Let the child set R up before the first call.
    while (!fs.existsSync(path.join(R, 'lnk'))) await new Promise((r) => setImmediate(r));
    const deadline = Date.now() + RACE_MS;
    for (let i = 0; i < ROUNDS && Date.now() < deadline; i++) {
      try {
        ok.push(await call(i));
      } catch {
        // refused, or raced away: fine
      }
    }
  } finally {
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
  }
  return ok;
}

const flip = (...rest: string[]) => uri(path.join(R, 'flip', ...rest));

test('sandbox fs race: fs/readFile through a swapped directory never reads a `none` file', async () => {
  const got = await race(S, () => c.call('fs/readFile', { path: flip('f'), sandbox: sandbox() }));
  const texts = got.map((r) => unb64(r.dataBase64));
  assert.ok(texts.length > 0, 'some reads went through the real directory (the race was live)');
  assert.deepEqual([...new Set(texts)], [INSIDE]);
});

test('sandbox fs race: fs/open + fs/readBlock through a swapped directory never read a `none` file', async () => {
  const got = await race(S, async (i) => {
    const handleId = `h${i}`;
    await c.call('fs/open', { handleId, path: flip('f'), sandbox: sandbox() });
    try {
      return unb64((await c.call('fs/readBlock', { handleId, offset: 0, len: 64 })).chunk);
    } finally {
      await c.call('fs/close', { handleId });
    }
  });
  assert.ok(got.length > 0, 'the race was live');
  assert.deepEqual([...new Set(got)], [INSIDE]);
});

test('sandbox fs race: fs/readDirectory through a swapped directory never lists a `none` directory', async () => {
  const got = await race(S, () => c.call('fs/readDirectory', { path: flip(), sandbox: sandbox() }));
  const listed = new Set(got.flatMap((r) => r.entries.map((e: { fileName: string }) => e.fileName)));
  assert.ok(got.length > 0, 'the race was live');
  assert.deepEqual([...listed].sort(), ['f', 'sub']);
});

test('sandbox fs race: fs/getMetadata through a swapped directory never describes a `none` file', async () => {
  const got = await race(S, () => c.call('fs/getMetadata', { path: flip('f'), sandbox: sandbox() }));
  assert.ok(got.length > 0, 'the race was live');
  assert.deepEqual([...new Set(got.map((m) => m.size))], [INSIDE.length]);
});

test('sandbox fs race: fs/canonicalize through a swapped directory never resolves into a `none` directory', async () => {
  const got = await race(S, () => c.call('fs/canonicalize', { path: flip('f'), sandbox: sandbox() }));
  assert.ok(got.length > 0, 'the race was live');
  assert.ok(got.every((r) => !r.path.startsWith(uri(S))), JSON.stringify(got.filter((r) => r.path.startsWith(uri(S)))[0]));
});

test('sandbox fs race: fs/walk never lists a `none` directory swapped in after it was queued (links not followed, and followed)', async () => {
  const got = await race(S, (i) =>
    c.call('fs/walk', { path: uri(R), options: { maxDepth: 3, maxDirectories: 50, maxEntries: 500, followDirectorySymlinks: i % 2 === 0 }, sandbox: sandbox() }),
  );
  const paths: string[] = got.flatMap((r) => r.entries.map((e: { path: string }) => e.path));
  assert.ok(paths.includes(flip('f')), 'some walks listed the real directory (the race was live)');
  assert.deepEqual(
    paths.filter((p) => p.endsWith('/only-in-secret')),
    [],
  );
});

test('sandbox fs race: fs/copy from a swapped directory never copies a `none` file (file and tree)', async () => {
  const got = await race(S, async (i) => {
    const dst = path.join(R, `copy-${i}`);
    await c.call('fs/copy', { sourcePath: flip(i % 2 ? 'f' : 'sub'), destinationPath: uri(dst), recursive: i % 2 === 0, sandbox: sandbox() });
    return fs.readFileSync(i % 2 ? dst : path.join(dst, 'g'), 'utf8');
  });
  assert.ok(got.length > 0, 'the race was live');
  assert.deepEqual([...new Set(got)], [INSIDE]);
  const copies = fs.readdirSync(R).filter((n) => n.startsWith('copy-'));
  for (const n of copies) {
    const p = path.join(R, n);
    assert.doesNotMatch(fs.lstatSync(p).isDirectory() ? snapshot(p) : fs.readFileSync(p, 'utf8'), /top secret/);
  }
});

test('sandbox fs race: fs/remove through a swapped directory never removes outside the writable root (file and tree)', async () => {
  const got = await race(O, (i) => c.call('fs/remove', { path: flip(i % 2 ? 'f' : 'sub'), recursive: i % 2 === 0, force: false, sandbox: sandbox() }));
  assert.ok(got.length > 0, 'the race was live');
  assert.equal(snapshot(O), 'f=original\nsub/g=original');
});

test('sandbox fs race: fs/rename through a swapped directory never moves out of or into a read-only directory', async () => {
  const got = await race(O, async (i) => {
    if (i % 2) return c.call('fs/rename', { sourcePath: flip('f'), destinationPath: uri(path.join(R, `moved-${i}`)), sandbox: sandbox() });
    fs.writeFileSync(path.join(R, `mine-${i}`), 'planted');
    return c.call('fs/rename', { sourcePath: uri(path.join(R, `mine-${i}`)), destinationPath: flip(`planted-${i}`), sandbox: sandbox() });
  });
  assert.ok(got.length > 0, 'the race was live');
  assert.equal(snapshot(O), 'f=original\nsub/g=original');
});

test('sandbox fs race: fs/createDirectory through a swapped directory never creates in a read-only directory (plain and -p)', async () => {
  const got = await race(O, (i) =>
    c.call('fs/createDirectory', { path: i % 2 ? flip(`d-${i}`) : flip(`p-${i}`, 'q'), recursive: i % 2 === 0, sandbox: sandbox() }),
  );
  assert.ok(got.length > 0, 'the race was live');
  assert.equal(snapshot(O), 'f=original\nsub/g=original');
  assert.deepEqual(fs.readdirSync(O).sort(), ['f', 'sub']);
});

test('sandbox fs race: fs/copy into a swapped directory never writes into a read-only directory (file and tree)', async () => {
  fs.writeFileSync(path.join(dir, 'payload'), 'payload');
  const got = await race(O, (i) => {
    if (i % 2) fs.writeFileSync(path.join(R, 'src-file'), 'payload');
    else fs.mkdirSync(path.join(R, 'src-tree'), { recursive: true }), fs.writeFileSync(path.join(R, 'src-tree', 'f'), 'payload');
    return c.call('fs/copy', {
      sourcePath: uri(path.join(R, i % 2 ? 'src-file' : 'src-tree')),
      destinationPath: i % 2 ? flip('f') : flip(`tree-${i}`),
      recursive: i % 2 === 0,
      sandbox: sandbox(),
    });
  });
  assert.ok(got.length > 0, 'the race was live');
  assert.equal(snapshot(O), 'f=original\nsub/g=original');
});

test('sandbox fs: confined operations still do the ordinary thing (control, no race), and close every descriptor they open', async () => {
  resetOutside();
  const fdsBefore = fs.readdirSync('/proc/self/fd').length;
  const W = path.join(R, 'ctl');
  fs.rmSync(W, { recursive: true, force: true });
  const sb = sandbox();
  await c.call('fs/createDirectory', { path: uri(path.join(W, 'a', 'b')), sandbox: sb });
  await c.call('fs/createDirectory', { path: uri(path.join(W, 'a', 'b')), sandbox: sb }); // mkdir -p on an existing directory
  await c.call('fs/writeFile', { path: uri(path.join(W, 'a', 'b', 'x')), dataBase64: b64('xx'), sandbox: sb });
  fs.symlinkSync('b/x', path.join(W, 'a', 'lnk'));
  fs.chmodSync(path.join(W, 'a', 'b', 'x'), 0o640);
  await c.call('fs/copy', { sourcePath: uri(path.join(W, 'a')), destinationPath: uri(path.join(W, 'a2')), recursive: true, sandbox: sb });
  assert.equal(fs.readlinkSync(path.join(W, 'a2', 'lnk')), 'b/x');
  assert.equal(fs.readFileSync(path.join(W, 'a2', 'b', 'x'), 'utf8'), 'xx');
  assert.equal(fs.statSync(path.join(W, 'a2', 'b', 'x')).mode & 0o777, 0o640);
  // copy onto an existing tree merges and overwrites
  fs.writeFileSync(path.join(W, 'a', 'b', 'x'), 'new');
  await c.call('fs/copy', { sourcePath: uri(path.join(W, 'a')), destinationPath: uri(path.join(W, 'a2')), recursive: true, sandbox: sb });
  assert.equal(fs.readFileSync(path.join(W, 'a2', 'b', 'x'), 'utf8'), 'new');
  await assert.rejects(c.call('fs/copy', { sourcePath: uri(path.join(W, 'a')), destinationPath: uri(path.join(W, 'a', 'b', 'in')), recursive: true, sandbox: sb }), /descendants/);
  const meta = await c.call('fs/getMetadata', { path: uri(path.join(W, 'a', 'lnk')), sandbox: sb });
  assert.deepEqual([meta.isSymlink, meta.isFile, meta.size], [true, true, 3]);
  assert.equal((await c.call('fs/canonicalize', { path: uri(path.join(W, 'a', 'lnk')), sandbox: sb })).path, uri(path.join(W, 'a', 'b', 'x')));
  assert.deepEqual((await c.call('fs/readDirectory', { path: uri(path.join(W, 'a')), sandbox: sb })).entries, [
    { fileName: 'b', isDirectory: true, isFile: false },
    { fileName: 'lnk', isDirectory: false, isFile: true },
  ]);
  await c.call('fs/rename', { sourcePath: uri(path.join(W, 'a2')), destinationPath: uri(path.join(W, 'a3')), sandbox: sb });
  await assert.rejects(c.call('fs/rename', { sourcePath: uri(path.join(W, 'a3')), destinationPath: uri(path.join(W, 'a')), sandbox: sb }), (e: any) => e.message === `destination \`${path.join(W, 'a')}\` already exists`);
  // a tree holding a link to the outside: the link goes, the outside stays
  fs.symlinkSync(O, path.join(W, 'a3', 'to-outside'));
  await c.call('fs/remove', { path: uri(path.join(W, 'a3')), sandbox: sb });
  assert.equal(fs.existsSync(path.join(W, 'a3')), false);
  assert.equal(snapshot(O), 'f=original\nsub/g=original');
  await c.call('fs/remove', { path: uri(path.join(W, 'gone')), force: true, sandbox: sb }); // missing + force
  await assert.rejects(c.call('fs/remove', { path: uri(path.join(W, 'gone')), force: false, sandbox: sb }), (e: any) => e.code === -32004);
  await assert.rejects(c.call('fs/createDirectory', { path: uri(path.join(W, 'a', 'b', 'x')), sandbox: sb }), /File exists/);
  await c.call('fs/remove', { path: uri(W), sandbox: sb });
  // Refusals and errors close what they opened too.
  await assert.rejects(c.call('fs/readFile', { path: uri(path.join(S, 'f')), sandbox: sb }));
  await assert.rejects(c.call('fs/readDirectory', { path: uri(path.join(R, 'nope')), sandbox: sb }));
  await assert.rejects(c.call('fs/copy', { sourcePath: uri(path.join(O, 'sub')), destinationPath: uri(path.join(O, 'sub2')), recursive: true, sandbox: sb }));
  // (past the first check, inside the confined operation)
  fs.mkdirSync(path.join(R, 'full', 'd'), { recursive: true });
  await assert.rejects(c.call('fs/readFile', { path: uri(path.join(R, 'full')), sandbox: sb }), /is not a file/);
  await assert.rejects(c.call('fs/open', { handleId: 'nf', path: uri(path.join(R, 'full')), sandbox: sb }), /is not a file/);
  await assert.rejects(c.call('fs/remove', { path: uri(path.join(R, 'full')), recursive: false, sandbox: sb }), /Directory not empty/);
  await assert.rejects(c.call('fs/createDirectory', { path: uri(path.join(R, 'full')), recursive: false, sandbox: sb }), /File exists/);
  await assert.rejects(c.call('fs/rename', { sourcePath: uri(path.join(R, 'nope')), destinationPath: uri(path.join(R, 'nope2')), sandbox: sb }), /No such file/);
  await assert.rejects(c.call('fs/copy', { sourcePath: uri(path.join(R, 'full')), destinationPath: uri(path.join(R, 'full', 'd', 'in')), recursive: true, sandbox: sb }), /descendants/);
  assert.equal(fs.readdirSync('/proc/self/fd').length, fdsBefore);
});
