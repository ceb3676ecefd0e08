// The workspace default terminal profile of a remote window: what is set, kept and taken back, and
// the workspace file "Open in New Window" writes (the workbench test is e2e "remote window").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../support/cli';
import { defaultProfilePlan, defaultProfileSetting, PROFILE_TITLE, remoteWindowWorkspace } from '../../../src/extension/terminals/default-profile';

test('the profile title is the one package.json contributes (VS Code matches the setting by title)', () => {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { contributes: { terminal: { profiles: { id: string; title: string }[] } } };
  const own = pkg.contributes.terminal.profiles.find((p) => p.id === 'execServer.terminalProfile');
  assert.equal(own?.title, PROFILE_TITLE);
});

test('setting key per platform', () => {
  assert.equal(defaultProfileSetting('linux'), 'terminal.integrated.defaultProfile.linux');
  assert.equal(defaultProfileSetting('darwin'), 'terminal.integrated.defaultProfile.osx');
  assert.equal(defaultProfileSetting('win32'), 'terminal.integrated.defaultProfile.windows');
});

test('a remote window with a workspace file and no value of its own gets ours; a value the user chose stays', () => {
  assert.equal(defaultProfilePlan({ remote: true, hasWorkspaceFile: true, workspaceValue: undefined, ours: false }), 'set');
  assert.equal(defaultProfilePlan({ remote: true, hasWorkspaceFile: true, workspaceValue: 'zsh', ours: false }), 'keep');
  assert.equal(defaultProfilePlan({ remote: true, hasWorkspaceFile: true, workspaceValue: PROFILE_TITLE, ours: true }), 'keep');
  // The user replaced ours: not ours to change any more, remote or not.
  assert.equal(defaultProfilePlan({ remote: true, hasWorkspaceFile: true, workspaceValue: 'zsh', ours: true }), 'keep');
  assert.equal(defaultProfilePlan({ remote: false, hasWorkspaceFile: true, workspaceValue: 'zsh', ours: true }), 'keep');
});

test('a single-folder remote window is not written (its settings file is the host folder\'s .vscode/settings.json)', () => {
  assert.equal(defaultProfilePlan({ remote: true, hasWorkspaceFile: false, workspaceValue: undefined, ours: false }), 'noWorkspaceFile');
});

test('the value we set is taken back once the window is not remote; one the user set to the same title is not', () => {
  assert.equal(defaultProfilePlan({ remote: false, hasWorkspaceFile: true, workspaceValue: PROFILE_TITLE, ours: true }), 'clear');
  assert.equal(defaultProfilePlan({ remote: false, hasWorkspaceFile: true, workspaceValue: PROFILE_TITLE, ours: false }), 'keep');
  assert.equal(defaultProfilePlan({ remote: false, hasWorkspaceFile: true, workspaceValue: undefined, ours: true }), 'keep');
});

test('the new window\'s workspace file: the folder and our default profile; names without separators; one per environment and path', () => {
  const w = remoteWindowWorkspace('devbox', '/home/me/project/', 'exec-server://devbox/home/me/project', 'linux');
  assert.equal(w.file, 'project (devbox).code-workspace');
  assert.deepEqual(JSON.parse(w.text), {
    folders: [{ uri: 'exec-server://devbox/home/me/project', name: 'project (devbox)' }],
    settings: { 'terminal.integrated.defaultProfile.linux': PROFILE_TITLE },
  });
  assert.notEqual(remoteWindowWorkspace('devbox', '/srv/project', 'x').dir, w.dir);
  assert.notEqual(remoteWindowWorkspace('other', '/home/me/project/', 'x').dir, w.dir);
  assert.match(w.dir, /^[0-9a-f]{16}$/);
  const odd = remoteWindowWorkspace('a/b', '/x/..\u0007/', 'x');
  assert.ok(!odd.file.includes('/') && !/[\u0000-\u001f]/.test(odd.file), odd.file);
  assert.equal(remoteWindowWorkspace('e', '/', 'x').file, 'root (e).code-workspace');
});
