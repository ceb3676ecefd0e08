// The agent endpoint's path pinning is Linux only (/proc/self/fd). Elsewhere it must not fall
// back silently to check-then-act: the pin functions say 'unsupported' with the reason, and the
// gate refuses, naming the platform, what it would have held to its folders — before asking —
// while what it never pins anyway (neverAsk, a protected path allowed for the one request) still
// runs. The platform is the gate's injected `platform` (as an extension host on macOS or
// Windows would have it); everything else is real: a loopback endpoint, its own engine, files.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pinParent, pinsOpen, pinTarget, pinUnsupported } from '../../../src/extension/agent/pin';
import { removeDir, tmpDir, uri, withAgent } from '../../support/agent-attack';

let ws: string;
let outside: string;
before(() => {
  ws = tmpDir('pin-platform-ws-');
  outside = tmpDir('pin-platform-out-');
  writeFileSync(path.join(ws, 'notes.txt'), 'inside\n');
  mkdirSync(path.join(ws, '.vscode'));
});
after(() => {
  removeDir(ws);
  removeDir(outside);
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
const NAMES_DARWIN = /path pinning .*Linux only; this extension host runs on darwin/;

describe('path pinning per platform', () => {
  it('pinParent / pinTarget: pinned on linux; unsupported, with the reason, on darwin and win32', async () => {
    const file = path.join(ws, 'notes.txt');
    for (const platform of ['darwin', 'win32'] as const) {
      const reason = pinUnsupported(platform);
      assert.match(reason ?? '', new RegExp(`Linux only; this extension host runs on ${platform}`));
      assert.deepEqual(await pinParent(file, [ws], [], false, false, platform), { kind: 'unsupported', reason });
      assert.deepEqual(await pinTarget(file, [ws], false, platform), { kind: 'unsupported', reason });
    }
    assert.equal(pinUnsupported('linux'), undefined);
    const before = pinsOpen();
    const p = await pinParent(file, [ws], [], false, false, 'linux');
    const t = await pinTarget(file, [ws], false, 'linux');
    assert.equal(p.kind, 'pinned');
    assert.equal(t.kind, 'pinned');
    if (p.kind === 'pinned') await p.pin.close();
    if (t.kind === 'pinned') await t.pin.close();
    assert.equal(pinsOpen(), before);
  });

  it('on darwin the gate refuses, naming the platform, the file requests it would hold — inside the workspace and asked alike — and asks nothing; nothing is read or written', async () => {
    await withAgent({ policy: 'askOutsideWorkspace', roots: [ws], platform: 'darwin', answer: () => 'Allow' }, async (f, a) => {
      const read = await a.send('fs/readFile', { path: uri(path.join(ws, 'notes.txt')) });
      assert.match(read.error?.message ?? '', NAMES_DARWIN, JSON.stringify(read));
      assert.equal(read.result, undefined);
      const list = await a.send('fs/readDirectory', { path: uri(ws) });
      assert.match(list.error?.message ?? '', NAMES_DARWIN);
      const written = path.join(ws, 'new.txt');
      const write = await a.send('fs/writeFile', { path: uri(written), dataBase64: b64('x') });
      assert.match(write.error?.message ?? '', NAMES_DARWIN);
      const mkdir = await a.send('fs/createDirectory', { path: uri(path.join(ws, 'sub', 'deeper')), recursive: true });
      assert.match(mkdir.error?.message ?? '', NAMES_DARWIN);
      const remove = await a.send('fs/remove', { path: uri(path.join(ws, 'notes.txt')) });
      assert.match(remove.error?.message ?? '', NAMES_DARWIN);
      // Outside the workspace the gate would ask, then hold the request to the folder the
      // question named: refused before the question, since that hold cannot be kept.
      const away = await a.send('fs/writeFile', { path: uri(path.join(outside, 'away.txt')), dataBase64: b64('x') });
      assert.match(away.error?.message ?? '', NAMES_DARWIN);
      assert.equal(f.questions.length, 0, 'nothing was asked');
      assert.equal(existsSync(written), false);
      assert.equal(existsSync(path.join(ws, 'sub')), false);
      assert.equal(readFileSync(path.join(ws, 'notes.txt'), 'utf8'), 'inside\n');
      assert.equal(existsSync(path.join(outside, 'away.txt')), false);
      // Said at the start too, once.
      assert.equal(f.logs.filter((l) => /approval: path pinning .*darwin.*refused unless execServer.approval.policy is neverAsk/.test(l)).length, 1, f.logs.join('\n'));
    });
  });

  it('on darwin what is never pinned still runs: neverAsk, and a protected path allowed for the one request', async () => {
    await withAgent({ policy: 'neverAsk', roots: [ws], platform: 'darwin' }, async (_f, a) => {
      const read = await a.send('fs/readFile', { path: uri(path.join(ws, 'notes.txt')) });
      assert.equal(Buffer.from((read.result as { dataBase64: string }).dataBase64, 'base64').toString(), 'inside\n');
    });
    await withAgent({ policy: 'askOutsideWorkspace', roots: [ws], platform: 'darwin', answer: () => 'Allow' }, async (f, a) => {
      const settings = path.join(ws, '.vscode', 'settings.json');
      const w = await a.send('fs/writeFile', { path: uri(settings), dataBase64: b64('{}') });
      assert.equal(w.error, undefined, JSON.stringify(w));
      assert.equal(f.questions.length, 1);
      assert.equal(readFileSync(settings, 'utf8'), '{}');
    });
  });

  it('linux control: the same requests run, pinned, without a question', async () => {
    await withAgent({ policy: 'askOutsideWorkspace', roots: [ws], platform: 'linux' }, async (f, a) => {
      const read = await a.send('fs/readFile', { path: uri(path.join(ws, 'notes.txt')) });
      assert.equal(Buffer.from((read.result as { dataBase64: string }).dataBase64, 'base64').toString(), 'inside\n');
      const written = path.join(ws, 'linux.txt');
      const write = await a.send('fs/writeFile', { path: uri(written), dataBase64: b64('y') });
      assert.equal(write.error, undefined, JSON.stringify(write));
      assert.equal(readFileSync(written, 'utf8'), 'y');
      const mkdir = await a.send('fs/createDirectory', { path: uri(path.join(ws, 'made', 'deeper')), recursive: true });
      assert.equal(mkdir.error, undefined, JSON.stringify(mkdir));
      assert.equal(f.questions.length, 0);
      assert.equal(f.logs.some((l) => /path pinning/.test(l)), false);
    });
  });
});
