// Process and diagnostics commands: interrupt/terminate/reveal a process of the view, list
// the processes, show the log and the request statistics.
import * as vscode from 'vscode';
import { ENVIRONMENTS_VIEW } from '../../common/ui';
import { str, type Args } from '../../common/ui';
import { noIcons } from '../../common';
import type { CommandContext } from '../../environments/ui';
import type { ProcessRegistry, TrackedProcess } from '../process-registry';

export interface ProcessCommandDeps {
  register: CommandContext['register'];
  log: CommandContext['log'];
  registry: ProcessRegistry;
  /** Shows per-environment request statistics (common/ui/telemetry.ts). */
  showRequestStatistics(): void;
}

export function registerProcessCommands(d: ProcessCommandDeps): void {
  /** args.key's process, else a picker over the running ones. */
  async function pickProcess(args: Args, action: string): Promise<TrackedProcess | undefined> {
    const key = str(args, 'key');
    if (key) return d.registry.get(key);
    // A label holds an agent's argv: `$(icon)` in it is shown as typed, not as an icon.
    const items = d.registry.list().map((p) => ({ label: noIcons(p.label), description: noIcons(`${p.environment} · ${p.origin}`), p }));
    if (!items.length) {
      void vscode.window.showInformationMessage('Exec Server: no running processes');
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder: `Process to ${action}` }))?.p;
  }

  d.register('execServer.process.interrupt', async (args) => {
    const p = await pickProcess(args, 'interrupt');
    if (p) await p.handle.interrupt();
    return !!p;
  });
  d.register('execServer.process.terminate', async (args) => {
    const p = await pickProcess(args, 'terminate');
    return p ? p.handle.terminate() : false;
  });

  // A process row's click: the terminal that shows it (PTY terminals and Run Command).
  d.register('execServer.process.reveal', async (args) => {
    const p = await pickProcess(args, 'show');
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
