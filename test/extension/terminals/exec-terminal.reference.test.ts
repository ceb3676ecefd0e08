// The extension's terminal and file-system layers against the reference `codex exec-server`
// (stdio): features it lacks (process/resize, fs/rename, fs/watch) must degrade, not break.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ExecServerClient } from '../../../src/client/client';
import { connectCommand } from '../../../src/client/connect';
import { ExecFileSystem, FileType, type FsErrorFactory } from '../../../src/extension/files/exec-file-system';
import { ExecTerminal } from '../../../src/extension/terminals/exec-terminal';
import { referenceBinary, referenceEnv } from '../../support/reference';
import { waitFor } from '../../support/wait';

class FsErr extends Error {
  constructor(readonly code: string, m: string) {
    super(m);
  }
}
const errors: FsErrorFactory = Object.fromEntries(
  ['FileNotFound', 'FileExists', 'FileNotADirectory', 'FileIsADirectory', 'NoPermissions', 'Unavailable', 'Unknown'].map((k) => [k, (m: string) => new FsErr(k, m)]),
) as unknown as FsErrorFactory;

let client: ExecServerClient;
let dir: string;
before(async () => {
  client = await connectCommand(referenceBinary(), ['exec-server', '--listen', 'stdio'], { env: referenceEnv(), clientName: 'vscode-ref-test' });
  dir = mkdtempSync(path.join(os.tmpdir(), 'vscode-ref-'));
});
after(async () => {
  await client?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('extension layers against the reference server', () => {
  it('a PTY terminal works; setDimensions is a harmless no-op; the exit code closes it', async () => {
    let out = '';
    const closes: (number | void)[] = [];
    const shell = (await client.environmentInfo()).shell.path;
    const term = new ExecTerminal({
      mode: 'pty',
      start: () => client.startProcess({ argv: [shell], cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, tty: true }),
    });
    term.onDidWrite((t) => (out += t));
    term.onDidClose((c) => closes.push(c));
    term.open({ rows: 30, columns: 90 });
    term.setDimensions({ rows: 40, columns: 100 });
    term.handleInput('echo "ref-$((40+2))"\r');
    await waitFor(() => out.includes('ref-42'), { what: 'the echo through the reference', detail: () => JSON.stringify(out) });
    term.handleInput('exit 6\r');
    assert.equal((await term.result).exitCode, 6);
    assert.deepEqual(closes, [6]);
  });

  it('files: create/overwrite semantics, rename without fs/rename, errors mapped', async () => {
    const fsx = new ExecFileSystem({ getClient: async () => client }, errors);
    const f = path.join(dir, 'a.txt');
    await fsx.writeFile('ref', f, new TextEncoder().encode('one'), { create: true, overwrite: false });
    await assert.rejects(fsx.writeFile('ref', f, new TextEncoder().encode('two'), { create: true, overwrite: false }), (e: unknown) => e instanceof FsErr && e.code === 'FileExists');
    assert.equal((await fsx.stat('ref', f)).type, FileType.File);
    await fsx.rename('ref', f, 'ref', path.join(dir, 'b.txt'), { overwrite: false });
    assert.equal(existsSync(f), false);
    assert.equal(readFileSync(path.join(dir, 'b.txt'), 'utf8'), 'one');
    writeFileSync(path.join(dir, 'big.bin'), Buffer.alloc(2 * 1024 * 1024 + 3, 7));
    assert.equal((await fsx.readFile('ref', path.join(dir, 'big.bin'))).length, 2 * 1024 * 1024 + 3);
    await assert.rejects(fsx.readFile('ref', path.join(dir, 'missing')), (e: unknown) => e instanceof FsErr && e.code === 'FileNotFound');
    // No fs/watch on the reference: watching yields no events and no error.
    const w = fsx.watch('ref', dir, true, () => {});
    w.dispose();
  });
});
