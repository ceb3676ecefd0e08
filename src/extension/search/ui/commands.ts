// Find in Files / Go to File for exec-server: folders (docs/extension.md, "Remote search").
// VS Code's own Search (Ctrl+Shift+F) and Quick Open (Ctrl+P) only search file: folders (text/file
// search providers for other schemes are a proposed API an installed extension cannot use), so:
//   - Find in Files (Remote Folder): ./find-in-files.ts, rows in the Remote Search view (./view.ts);
//   - Go to File (Remote Folder): ./go-to-file.ts;
//   - a one-time notification (and the view's welcome text) says so when an exec-server
//     folder is open, pointing at these two commands: ./notice.ts.
import * as vscode from 'vscode';
import { SEARCH_RESULTS_VIEW } from '../../common/ui';
import type { CommandContext } from '../../environments/ui';
import { registerFindInFiles } from './find-in-files';
import { searchFolders } from './folders';
import { registerGoToFile } from './go-to-file';
import { announceRemoteSearch } from './notice';
import { SearchResultsTree } from './view';

export function registerSearchCommands(d: CommandContext): void {
  const tree = new SearchResultsTree();
  const view = vscode.window.createTreeView(SEARCH_RESULTS_VIEW, { treeDataProvider: tree, showCollapseAll: true });
  d.ctx.subscriptions.push(tree, view);
  const folders = searchFolders(d);
  registerFindInFiles(d, folders, tree, view);
  registerGoToFile(d, folders);
  announceRemoteSearch(d, folders);
}
