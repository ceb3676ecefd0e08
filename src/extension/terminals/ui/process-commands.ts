// Process and diagnostics commands: interrupt/terminate/reveal a process of the view, list
// the processes, show the log and the request statistics.
import * as vscode from 'vscode';
import type { CommandDeps } from '../../ui/command-deps';
import { ENVIRONMENTS_VIEW } from '../../common/ui/command-ids';

export function registerProcessCommands(d: CommandDeps): void {
  d.register('execServer.process.interrupt', async (args) => {
    const p = await d.pickProcess(args, 'interrupt');
    if (p) await p.handle.interrupt();
    return !!p;
  });
  d.register('execServer.process.terminate', async (args) => {
    const p = await d.pickProcess(args, 'terminate');
    return p ? p.handle.terminate() : false;
  });

  // A process row's click: the terminal that shows it (PTY terminals and Run Command).
  d.register('execServer.process.reveal', async (args) => {
    const p = await d.pickProcess(args, 'show');
    if (!p) return false;
    const terminal = vscode.window.terminals.find((t) => {
      const pty = (t.creationOptions as vscode.ExtensionTerminalOptions).pty as { processHandle?: unknown } | undefined;
      return t.exitStatus === undefined && pty?.processHandle === p.handle;
    });
    if (!terminal) {
      void vscode.window.showInformationMessage(`Exec Server: ${p.label} (${p.origin}) has no terminal in this window`);
      return false;
    }
    terminal.show();
    return true;
  });

  d.register('execServer.showProcesses', async () => {
    await vscode.commands.executeCommand(`${ENVIRONMENTS_VIEW}.focus`);
    return d.registry.list().map((p) => ({ environment: p.environment, processId: p.handle.processId, label: p.label, origin: p.origin }));
  });

  d.register('execServer.showLog', () => d.log.show());
  d.register('execServer.showRequestStatistics', () => d.showRequestStatistics());
}
