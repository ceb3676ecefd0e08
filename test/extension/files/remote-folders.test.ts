// Open Remote Folder's logic without the UI: path steps, the browser rows, the recent list,
// and when adding a folder reloads the window.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addingFolderReloads, addRecentFolder, browserRows, childPath, MAX_RECENT_FOLDERS, normalizePath, parentPath, readRecentFolders, typedPath } from '../../../src/extension/files/remote-folders';

describe('remote folders', () => {
  it('normalizes absolute paths and refuses relative ones', () => {
    assert.equal(normalizePath('/a//b/./c/../d/'), '/a/b/d');
    assert.equal(normalizePath('/..'), '/');
    assert.equal(parentPath('/a/b'), '/a');
    assert.equal(parentPath('/'), '/');
    assert.equal(childPath('/a', 'b c'), '/a/b c');
    assert.throws(() => normalizePath('file:///root'), /not an absolute path/);
    assert.throws(() => childPath('/a', '../x'), /not a folder name/);
    assert.equal(typedPath(' /srv/../tmp '), '/tmp');
    assert.equal(typedPath('src'), undefined);
  });

  it('lists "open this folder", "..", then sub-folders (hidden last), without files', () => {
    const rows = browserRows('/home/u/', [
      { fileName: 'zeta', isDirectory: true },
      { fileName: '.cache', isDirectory: true },
      { fileName: 'Alpha', isDirectory: true },
      { fileName: 'notes.txt', isDirectory: false },
      { fileName: 'beta', isDirectory: true },
    ]);
    assert.deepEqual(rows, [
      { kind: 'accept', path: '/home/u' },
      { kind: 'up', path: '/home' },
      { kind: 'folder', name: 'Alpha', path: '/home/u/Alpha' },
      { kind: 'folder', name: 'beta', path: '/home/u/beta' },
      { kind: 'folder', name: 'zeta', path: '/home/u/zeta' },
      { kind: 'folder', name: '.cache', path: '/home/u/.cache' },
    ]);
    assert.deepEqual(browserRows('/', []), [{ kind: 'accept', path: '/' }]);
  });

  it('keeps recent folders most-recent first, without duplicates, bounded, and drops malformed state', () => {
    let list = addRecentFolder(undefined, { environment: 'box', path: '/a' });
    list = addRecentFolder(list, { environment: 'box', path: '/b' });
    list = addRecentFolder(list, { environment: 'box', path: '/a' });
    assert.deepEqual(list, [{ environment: 'box', path: '/a' }, { environment: 'box', path: '/b' }]);
    for (let i = 0; i < 20; i++) list = addRecentFolder(list, { environment: 'e', path: `/p${i}` });
    assert.equal(list.length, MAX_RECENT_FOLDERS);
    assert.deepEqual(list[0], { environment: 'e', path: '/p19' });
    assert.deepEqual(readRecentFolders([null, 'x', { environment: 'e' }, { environment: 'e', path: 'rel' }, { environment: 'e', path: '/ok' }]), [{ environment: 'e', path: '/ok' }]);
  });

  it('adding a folder reloads an empty window or a single-folder window, not a multi-root workspace', () => {
    assert.equal(addingFolderReloads(0, false), true);
    assert.equal(addingFolderReloads(1, false), true);
    assert.equal(addingFolderReloads(2, true), false);
    assert.equal(addingFolderReloads(0, true), true);
  });
});
