// Keeps the terminal panel's '+' button on the folder's environment in a remote window: the
// workspace-scope terminal.integrated.defaultProfile.<os> names this extension's profile while every
// folder is an exec-server: folder, and the value it set is taken back once one is not
// (src/extension/terminals/default-profile.ts says what is written where).
import * as vscode from 'vscode';
import { SCHEME } from '../../common';
import { defaultProfilePlan, defaultProfileSetting, PROFILE_TITLE, remoteWindowWorkspace } from '../default-profile';

/** workspaceState: this extension set the workspace's default profile. */
const SET_BY_US = 'execServer.terminal.defaultProfileSet';
const WINDOWS_DIR = 'remote-windows';

/** Folder of the workspace files "Open in New Window" writes (one per environment and folder). */
const windowsDir = (ctx: vscode.ExtensionContext) => vscode.Uri.joinPath(ctx.globalStorageUri, WINDOWS_DIR);

/** Writes (or rewrites) the workspace file of a remote folder's own window and returns its URI. */
export async function remoteWindowWorkspaceFile(ctx: vscode.ExtensionContext, environment: string, folderPath: string, folderUri: vscode.Uri): Promise<vscode.Uri> {
  const w = remoteWindowWorkspace(environment, folderPath, folderUri.toString());
  const dir = vscode.Uri.joinPath(windowsDir(ctx), w.dir);
  const uri = vscode.Uri.joinPath(dir, w.file);
  await vscode.workspace.fs.createDirectory(dir);
  await vscode.workspace.fs.writeFile(uri, Buffer.from(w.text, 'utf8'));
  return uri;
}

export function keepRemoteDefaultProfile(ctx: vscode.ExtensionContext, log: vscode.LogOutputChannel): void {
  const key = defaultProfileSetting();
  let said = false;
  let running: Promise<void> = Promise.resolve();
  const update = async () => {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const remote = folders.length > 0 && folders.every((f) => f.uri.scheme === SCHEME);
    const file = vscode.workspace.workspaceFile;
    const config = vscode.workspace.getConfiguration();
    const workspaceValue = config.inspect(key)?.workspaceValue;
    // A workspace file this extension wrote carries the value from the start.
    const own = windowsDir(ctx);
    const ownFile = !!file && file.scheme === own.scheme && file.path.startsWith(own.path + '/');
    const ours = ctx.workspaceState.get<boolean>(SET_BY_US) === true || ownFile;
    const plan = defaultProfilePlan({ remote, hasWorkspaceFile: !!file, workspaceValue, ours });
    if (plan === 'set') {
      await config.update(key, PROFILE_TITLE, vscode.ConfigurationTarget.Workspace);
      await ctx.workspaceState.update(SET_BY_US, true);
      log.info(`terminals: ${key} = "${PROFILE_TITLE}" in this workspace (its folders are remote folders)`);
    } else if (plan === 'clear') {
      await config.update(key, undefined, vscode.ConfigurationTarget.Workspace);
      await ctx.workspaceState.update(SET_BY_US, undefined);
      log.info(`terminals: ${key} taken back from this workspace (a folder is not a remote folder)`);
    } else if (plan === 'noWorkspaceFile' && !said) {
      said = true;
      log.info(`terminals: the '+' button opens VS Code's default profile in this single-folder window: its workspace settings are the host's .vscode/settings.json, which the extension does not write (Open Remote Folder → Open in New Window gives a window where it opens the folder's shell)`);
    } else if (plan === 'keep' && remote && workspaceValue !== PROFILE_TITLE && !said) {
      said = true;
      log.info(`terminals: this workspace's ${key} is "${String(workspaceValue)}" (kept)`);
    }
  };
  const schedule = () => {
    running = running.then(update).catch((e: unknown) => log.warn(`terminals: default profile: ${e instanceof Error ? e.message : String(e)}`));
  };
  ctx.subscriptions.push(vscode.workspace.onDidChangeWorkspaceFolders(schedule));
  schedule();
}
