// The folders Find in Files and Go to File work on: the exec-server: workspace folders (or the
// one given), each with its environment and the names VS Code's settings exclude.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { SCHEME } from '../../common';
import { str, type Args } from '../../common/ui';
import type { CommandContext } from '../../environments/ui';
import { excludedNamesFromSettings } from '../argv';

export const NOT_COVERED =
  "VS Code's own Search (Ctrl+Shift+F) and Quick Open (Ctrl+P) do not look inside exec-server: folders (remote folders).";

export interface RemoteFolder {
  uri: vscode.Uri;
  environment: string;
  label: string;
}

export interface SearchFolders {
  /** Every exec-server workspace folder. */
  open(): RemoteFolder[];
  /** The folder given (args.folder URI string, or a URI from the Explorer's context menu), else every exec-server workspace folder. */
  target(args: Args, raw: unknown): RemoteFolder[];
  /** VS Code's files.exclude and search.exclude (their "**" + "/name" entries) for this folder. */
  excludedNames(f: RemoteFolder): string[];
  /** No exec-server folder is open: say so, offering Open Remote Folder. */
  explainNoFolder(): Promise<void>;
}

export function searchFolders(d: Pick<CommandContext, 'store'>): SearchFolders {
  // Authorities may come back lower-cased (as in the file system provider).
  const environmentOf = (authority: string) =>
    d.store.get(authority)?.name ?? d.store.list().find((e) => e.name.toLowerCase() === authority.toLowerCase())?.name ?? authority;
  const asFolder = (uri: vscode.Uri, label?: string): RemoteFolder => ({ uri, environment: environmentOf(uri.authority), label: label ?? (path.posix.basename(uri.path) || uri.path) });
  const open = (): RemoteFolder[] => (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === SCHEME).map((f) => asFolder(f.uri, f.name));
  return {
    open,
    target(args, raw) {
      const given = raw instanceof vscode.Uri ? raw : str(args, 'folder') ? vscode.Uri.parse(str(args, 'folder')!, true) : undefined;
      if (!given) return open();
      if (given.scheme !== SCHEME) {
        throw new Error(`Exec Server: ${given.toString(true)} is not an exec-server folder — VS Code's own Search (Ctrl+Shift+F) covers local folders`);
      }
      return [asFolder(given)];
    },
    excludedNames: (f) =>
      excludedNamesFromSettings([
        vscode.workspace.getConfiguration('files', f.uri).get<Record<string, unknown>>('exclude'),
        vscode.workspace.getConfiguration('search', f.uri).get<Record<string, unknown>>('exclude'),
      ]),
    async explainNoFolder() {
      const openRemote = 'Open Remote Folder…';
      const pick = await vscode.window.showInformationMessage(
        `Exec Server: no exec-server folder is open. ${NOT_COVERED} Open one first; for local folders use VS Code's own Search.`,
        openRemote,
      );
      if (pick === openRemote) await vscode.commands.executeCommand('execServer.openRemoteFolder');
    },
  };
}

/** `p`, or undefined as soon as `signal` aborts (Cancel must not wait for a slow connect). */
export function unlessAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
