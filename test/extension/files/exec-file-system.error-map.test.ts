// mapFsError classifies real server failures by their codes (JSON-RPC code, then the errno the
// answer reports as "(os error N)"), not by the words of the message: a path in a message can
// say anything — a directory named "no such file or directory" is not a missing file (the old
// message regex answered FileNotFound, which VS Code offers to create).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ExecServerClient } from '../../../src/client/client';
import { connectInProcess } from '../../../src/client/connect';
import { managedSandbox } from '../../../src/protocol/codex-sandbox';
import { ExecServer } from '../../../src/server/exec-server';
import { mapFsError, type FsErrorFactory } from '../../../src/extension/files/exec-file-system';

class Kind extends Error {
  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}
const errors = Object.fromEntries(
  ['FileNotFound', 'FileExists', 'FileNotADirectory', 'FileIsADirectory', 'NoPermissions', 'Unavailable', 'Unknown'].map((k) => [k, (m: string) => new Kind(k, m)]),
) as unknown as FsErrorFactory;

/** The FileSystemError kind of the failure `op` rejects with. */
async function kindOf(op: () => Promise<unknown>): Promise<string> {
  try {
    await op();
  } catch (e) {
    return (mapFsError(e, 'target', errors) as Kind).kind;
  }
  assert.fail('the operation succeeded');
}

describe('mapFsError on real failures', () => {
  const server = new ExecServer();
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-error-map-')));
  const p = (...s: string[]) => path.join(dir, ...s);
  let client: ExecServerClient;
  before(async () => {
    writeFileSync(p('file.txt'), 'x');
    mkdirSync(p('sub'));
    mkdirSync(p('no such file or directory'));
    mkdirSync(p('already exists'));
    client = await connectInProcess(server, { clientName: 'fs-error-map' });
  });
  after(async () => {
    await client.close();
    await server.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a missing file (-32004) is FileNotFound', async () => {
    assert.equal(await kindOf(() => client.fs.readFile(p('missing.txt'))), 'FileNotFound');
  });

  it('EEXIST, ENOTDIR, EISDIR from the OS map to FileExists, FileNotADirectory, FileIsADirectory', async () => {
    assert.equal(await kindOf(() => client.fs.createDirectory(p('sub'), false)), 'FileExists');
    assert.equal(await kindOf(() => client.fs.stat(p('file.txt', 'inside'))), 'FileNotADirectory');
    assert.equal(await kindOf(() => client.fs.writeFile(p('sub'), new Uint8Array([1]))), 'FileIsADirectory');
  });

  it('a sandbox denial (EACCES / EROFS) is NoPermissions', async () => {
    const u = (f: string) => pathToFileURL(f).href;
    const sandbox = managedSandbox({ entries: [], cwd: u(dir) });
    assert.equal(await kindOf(() => client.request('fs/readFile', { path: u(p('file.txt')), sandbox })), 'NoPermissions');
    assert.equal(await kindOf(() => client.request('fs/writeFile', { path: u(p('new.txt')), dataBase64: '', sandbox })), 'NoPermissions');
  });

  it('a message whose path names an error is not that error', async () => {
    // "path `…/no such file or directory` is not a file" (-32600, no errno): the directory exists.
    assert.equal(await kindOf(() => client.fs.readFile(p('no such file or directory'))), 'Unknown');
    assert.equal(await kindOf(() => client.fs.readFile(p('already exists'))), 'Unknown');
  });

  it('a closed connection is Unavailable', async () => {
    const c = await connectInProcess(server, { clientName: 'fs-error-map-closed' });
    await c.close();
    assert.equal(await kindOf(() => c.fs.stat(dir)), 'Unavailable');
  });
});
