// "Connection lost; reconnecting…" as a notification that goes away by itself: a progress
// notification, open exactly while the environment is reconnecting — closed once it is connected
// again, disconnected, removed or failed for good (then the "could not reconnect" error with
// Retry takes over). A plain warning toast stayed on screen after the reconnect and
// the API cannot close one.
import * as vscode from 'vscode';
import { noLinks } from '../../common';
import type { EnvironmentManager, EnvironmentState } from '../manager';

const PENDING: EnvironmentState[] = ['reconnecting', 'connecting'];

export function showReconnecting(manager: EnvironmentManager, environment: string, reason: string): void {
  if (!PENDING.includes(manager.state(environment))) {
    // No attempt left (or already over): no "reconnecting…" that nothing follows.
    void vscode.window.showWarningMessage(`Exec Server: ${noLinks(reason)}`);
    return;
  }
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Exec Server: ${noLinks(reason)}; reconnecting…` }, () =>
    new Promise<void>((resolve) => {
      const sub = manager.onDidChangeState((e) => {
        if (e.environment !== environment || PENDING.includes(e.state)) return;
        sub.dispose();
        resolve();
      });
    }),
  );
}
