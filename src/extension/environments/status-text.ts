// The words the UI shows for an environment's state and for the status-bar item — one
// vocabulary everywhere (the view, the status-bar tooltips, the current-environment indicator):
// connecting / connected / reconnecting / disconnected / failed, and for Local "ready". Local
// needs no connection (its server runs in the extension host): it reads "ready" whether or not
// it was used yet (it read "ready" before the first use and "connected" after), unless it failed
// (an unsupported platform). Free of `vscode`.
import type { EnvironmentState } from './manager';
import type { EnvironmentKind } from './store';

export type ShownState = EnvironmentState | 'ready';

/** The state as shown: Local is "ready" (used or not), unless it failed. */
export function shownState(kind: EnvironmentKind | undefined, state: EnvironmentState): ShownState {
  return kind === 'local' && state !== 'failed' ? 'ready' : state;
}

export interface StatusInput {
  envs: { name: string; kind: EnvironmentKind; state: EnvironmentState }[];
  endpointPort?: number;
}

/**
 * Status-bar text: what a user wants at a glance — which remote is connected (or failing), the
 * agent endpoint's port — in words, not a bare "0/1".
 */
export function statusText({ envs, endpointPort }: StatusInput): string {
  const remotes = envs.filter((e) => e.kind !== 'local');
  const named = (states: EnvironmentState[]) => remotes.filter((e) => states.includes(e.state)).map((e) => e.name);
  const busy = named(['connecting', 'reconnecting']);
  const failed = named(['failed']);
  const connected = named(['connected']);
  let text: string;
  const several = (names: string[]) => (names.length === 1 ? names[0] : `${names.length} environments`);
  if (busy.length) text = `$(sync~spin) Exec Server: ${several(busy)} ${named(['reconnecting']).length === busy.length ? 'reconnecting' : 'connecting'}…`;
  else if (failed.length) text = `$(warning) Exec Server: ${several(failed)} failed`;
  else if (connected.length === 1) text = `$(vm-active) Exec Server: ${connected[0]}`;
  else if (connected.length > 1) text = `$(vm-active) Exec Server: ${connected.length} connected`;
  else text = '$(server-process) Exec Server: Local';
  if (endpointPort !== undefined) text += ` $(broadcast) agent :${endpointPort}`;
  return text;
}
