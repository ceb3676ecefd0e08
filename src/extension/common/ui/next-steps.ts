// The notice after an environment was saved or connected, with the two things a user does next
// with it (Connect to Host, Connect to Container, Add Environment show the same one).
import * as vscode from 'vscode';
import { executeCommand } from './command-registry';

/** Shows `message` with "New Terminal" and "Open Remote Folder" buttons for `environment`. */
export function offerNextSteps(message: string, environment: string): void {
  void vscode.window.showInformationMessage(message, 'New Terminal', 'Open Remote Folder').then((c) => {
    if (c === 'New Terminal') void executeCommand('execServer.newTerminal', { environment });
    if (c === 'Open Remote Folder') void executeCommand('execServer.openRemoteFolder', { environment });
  });
}
