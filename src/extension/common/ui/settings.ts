// Binds the settings owner (src/extension/common/settings.ts) to VS Code: reads each execServer.* setting's
// user (global) value or default — never a workspace or folder value —, writes to the user
// settings, and refreshes on every configuration change of the section.
import * as vscode from 'vscode';
import { SettingsOwner, type SettingKey } from '../settings';

export function createSettingsOwner(ctx: vscode.ExtensionContext): SettingsOwner {
  const config = () => vscode.workspace.getConfiguration('execServer');
  const owner = new SettingsOwner(
    (key: SettingKey) => {
      const i = config().inspect(key);
      return i?.globalValue ?? i?.defaultValue;
    },
    (key, value) => Promise.resolve(config().update(key, value, vscode.ConfigurationTarget.Global)),
  );
  ctx.subscriptions.push(
    owner,
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('execServer')) owner.refresh();
    }),
  );
  return owner;
}
