// The FileSystemProvider (exec-server://<environment>/<absolute path>) exercised through
// VS Code's own file service (`vscode.workspace.fs`, file watchers, editors, workspace folders). Both
// servers (Local in-process, remote CLI) run on this machine: each effect is checked on the real disk too.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { test } from './framework';
import { assert, assertEqual, expectReject, freshDir, waitFor } from './util';

const SCHEME = 'exec-server';
export function remoteUri(env: string, absPath: string): vscode.Uri {
  return vscode.Uri.from({ scheme: SCHEME, authority: env, path: absPath });
}
const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Registers the FileSystemProvider tests for one environment (`env()` returns its name after setup). */
export function registerFsTests(label: string, env: () => string): void {
  test(`${label} fs: write, read, stat and list files through exec-server:// URIs`, async () => {
    const dir = freshDir(`${label}-fs-rw`);
    const envName = env();
    const file = remoteUri(envName, path.join(dir, 'sub', 'hello.txt'));
    await vscode.workspace.fs.createDirectory(remoteUri(envName, path.join(dir, 'sub')));
    await vscode.workspace.fs.writeFile(file, bytes('hello remote\n'));
    assertEqual(readFileSync(path.join(dir, 'sub', 'hello.txt'), 'utf8'), 'hello remote\n', 'bytes on disk');
    writeFileSync(path.join(dir, 'sub', 'local.txt'), 'from disk');
    assertEqual(text(await vscode.workspace.fs.readFile(remoteUri(envName, path.join(dir, 'sub', 'local.txt')))), 'from disk', 'readFile');
    const st = await vscode.workspace.fs.stat(file);
    assertEqual(st.type, vscode.FileType.File, 'stat type');
    assertEqual(st.size, 13, 'stat size');
    const entries = (await vscode.workspace.fs.readDirectory(remoteUri(envName, path.join(dir, 'sub')))).sort();
    assertEqual(entries, [['hello.txt', vscode.FileType.File], ['local.txt', vscode.FileType.File]], 'readDirectory');
    const missing = await expectReject('reading a missing file', () =>
      Promise.resolve(vscode.workspace.fs.readFile(remoteUri(envName, path.join(dir, 'nope.txt')))));
    assert(missing instanceof vscode.FileSystemError && missing.code === 'FileNotFound',
      `a missing file is FileNotFound (got ${(missing as { code?: string }).code}: ${missing.message})`);
  });

  test(`${label} fs: rename and delete through exec-server:// URIs change the disk`, async () => {
    const dir = freshDir(`${label}-fs-mv`);
    const envName = env();
    writeFileSync(path.join(dir, 'a.txt'), 'A');
    writeFileSync(path.join(dir, 'b.txt'), 'B');
    await vscode.workspace.fs.rename(remoteUri(envName, path.join(dir, 'a.txt')), remoteUri(envName, path.join(dir, 'c.txt')));
    assert(!existsSync(path.join(dir, 'a.txt')), 'source gone after rename');
    assertEqual(readFileSync(path.join(dir, 'c.txt'), 'utf8'), 'A', 'renamed content');
    const clash = await expectReject('rename onto an existing file without overwrite', () =>
      Promise.resolve(vscode.workspace.fs.rename(remoteUri(envName, path.join(dir, 'b.txt')), remoteUri(envName, path.join(dir, 'c.txt')))));
    assert(clash instanceof vscode.FileSystemError && clash.code === 'FileExists', `rename onto existing is FileExists (got ${clash.message})`);
    assertEqual(readFileSync(path.join(dir, 'c.txt'), 'utf8'), 'A', 'target untouched by the refused rename');
    await vscode.workspace.fs.delete(remoteUri(envName, path.join(dir, 'b.txt')));
    assert(!existsSync(path.join(dir, 'b.txt')), 'file deleted');
    await vscode.workspace.fs.createDirectory(remoteUri(envName, path.join(dir, 'tree', 'deep')));
    writeFileSync(path.join(dir, 'tree', 'deep', 'x'), 'x');
    await vscode.workspace.fs.delete(remoteUri(envName, path.join(dir, 'tree')), { recursive: true });
    assert(!existsSync(path.join(dir, 'tree')), 'directory deleted recursively');
  });

  test(`${label} fs: an external change to a file arrives through a FileSystemWatcher`, async () => {
    const dir = freshDir(`${label}-fs-watch`);
    const envName = env();
    const target = path.join(dir, 'external.txt');
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(remoteUri(envName, dir), '**'));
    const seen: string[] = [];
    const record = (kind: string) => (u: vscode.Uri) => seen.push(`${kind} ${u.scheme}://${u.authority}${u.path}`);
    watcher.onDidCreate(record('created'));
    watcher.onDidChange(record('changed'));
    watcher.onDidDelete(record('deleted'));
    try {
      // The watch is set up asynchronously; keep changing the file (outside VS Code) until an event arrives.
      let n = 0;
      await waitFor(`a watcher event for ${target}`, () => {
        writeFileSync(target, `external change ${++n}\n`);
        return seen.some((s) => s.endsWith(`${SCHEME}://${envName}${target}`) && !s.startsWith('deleted'));
      }, 30_000, 1_000);
    } finally {
      watcher.dispose();
    }
  });

  test(`${label} fs: an exec-server:// file opened in an editor shows its text and saving writes it back`, async () => {
    const dir = freshDir(`${label}-fs-editor`);
    const envName = env();
    const file = path.join(dir, 'notes.txt');
    writeFileSync(file, 'line one\n');
    const uri = remoteUri(envName, file);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    assertEqual(doc.getText(), 'line one\n', 'text shown in the editor');
    const edit = new vscode.WorkspaceEdit();
    edit.insert(uri, new vscode.Position(1, 0), 'line two\n');
    assert(await vscode.workspace.applyEdit(edit), 'edit applied');
    assert(await doc.save(), 'document saved');
    assertEqual(readFileSync(file, 'utf8'), 'line one\nline two\n', 'bytes on disk after save');
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  test(`${label} fs: execServer.openRemoteFolder adds the folder to the workspace`, async () => {
    const dir = freshDir(`${label}-fs-folder`);
    const envName = env();
    writeFileSync(path.join(dir, 'marker.txt'), 'm');
    const uri = remoteUri(envName, dir);
    await vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: envName, path: dir });
    const folder = await waitFor('the remote folder among the workspace folders', () =>
      vscode.workspace.workspaceFolders?.find((f) => f.uri.toString() === uri.toString()), 20_000);
    assertEqual(folder.uri.scheme, SCHEME, 'workspace folder scheme');
    const listed = await vscode.workspace.fs.readDirectory(folder.uri);
    assertEqual(listed, [['marker.txt', vscode.FileType.File]], 'entries of the remote workspace folder');
    // The folder stays open (it shows in the final screenshot); it is not the first folder, so
    // the extension host, and with it the suite, keeps running.
  });
}
