// Remote folder commands: Open Remote Folder (recent, browse, or {environment, path}) and
// Reveal in Explorer for exec-server: URIs.
import * as vscode from 'vscode';
import type { CommandContext } from '../../environments/ui';
import { str } from '../../common/ui';
import { remoteUri } from './file-system-provider';
import { browseFolder, openFolder, pickStart, pickWhere, startFolder, type OpenWhere } from './open-remote-folder';
import { SCHEME } from '../../common';
import { remoteWindowWorkspaceFile } from '../../terminals/ui';

export function registerFolderCommands(d: CommandContext): void {
  const folderDeps = {
    globalState: d.ctx.globalState,
    environments: () => d.store.list().map((e) => ({ name: e.name, state: d.manager.state(e.name) })),
    clientFor: d.clientFor,
    log: d.log,
    windowWorkspace: (environment: string, folder: string, uri: vscode.Uri) => remoteWindowWorkspaceFile(d.ctx, environment, folder, uri),
  };

  // Args: {environment, path, newWindow?}: opens without asking (adds to this window unless
  // newWindow); {environment} alone browses that environment.
  d.register('execServer.openRemoteFolder', async (args) => {
    const named = str(args, 'environment') ? d.known(str(args, 'environment')!) : undefined;
    let env: string;
    let folder = str(args, 'path');
    if (folder && named) env = named;
    else {
      const start = await pickStart(folderDeps, named);
      if (!start) return undefined;
      if (start.kind === 'recent') {
        env = start.folder.environment;
        folder = start.folder.path;
      } else {
        env = start.environment;
        const client = await d.clientFor(env);
        folder = await browseFolder(env, client, await startFolder(client));
        if (!folder) return undefined;
      }
    }
    if (!folder.startsWith('/')) throw new Error(`Exec Server: "${folder}" is not an absolute path`);
    const client = await d.clientFor(env);
    const meta = await client.fs.stat(folder).catch((e: Error) => {
      throw new Error(`Exec Server: cannot open ${folder} in ${env}: ${e.message}`);
    });
    if (!meta.isDirectory) throw new Error(`Exec Server: ${folder} in ${env} is not a folder`);
    let where: OpenWhere | undefined;
    if (str(args, 'path')) where = args?.newWindow === true ? 'newWindow' : 'addToWorkspace';
    else where = await pickWhere(`${folder} (${env})`);
    if (!where) return undefined;
    const uri = await openFolder(folderDeps, env, folder, where, !str(args, 'path'));
    return uri?.toString();
  });

  d.register('execServer.revealInExplorer', async (args, raw) => {
    let uri: vscode.Uri | undefined = raw instanceof vscode.Uri ? raw : undefined;
    if (!uri && str(args, 'environment') && str(args, 'path')) uri = remoteUri(d.known(str(args, 'environment')!), str(args, 'path')!);
    uri ??= vscode.window.activeTextEditor?.document.uri;
    if (!uri || uri.scheme !== SCHEME) {
      void vscode.window.showInformationMessage('Exec Server: nothing to reveal (open a file of a remote folder first)');
      return false;
    }
    await vscode.commands.executeCommand('revealInExplorer', uri);
    return true;
  });
}
