// The "Remote Search" view (Exec Server container): the rows of the last Find in Files on
// exec-server folders — a row per file (icon from its name, folder path as description) with
// its matching lines below (the match highlighted; a click opens the exec-server:// file at
// the line and column). The view's message line carries the summary ("12 matching lines in
// 3 files — 40 more not shown", "No results", "Search failed: …").
import * as path from 'node:path';
import * as vscode from 'vscode';
import { visibleLine, visiblePath, type SearchMatch } from '../parse';

export interface FileNode {
  type: 'searchFile';
  /** exec-server://<environment>/<absolute path> */
  uri: vscode.Uri;
  /** Relative to the searched folder. */
  relPath: string;
  /** The folder's name, shown when several folders were searched. */
  folderLabel?: string;
  matches: MatchNode[];
}
export interface MatchNode {
  type: 'searchMatch';
  file: FileNode;
  match: SearchMatch;
}
export type SearchNode = FileNode | MatchNode;

/** Leading blanks are not shown; the ranges move with the text. */
function trimmedLine(m: SearchMatch): { label: string; highlights: [number, number][] } {
  const lead = m.text.length - m.text.trimStart().length;
  const label = visibleLine(m.text.slice(lead).trimEnd());
  const highlights = m.ranges
    .map(([s, e]): [number, number] => [Math.max(0, s - lead), Math.min(label.length, e - lead)])
    .filter(([s, e]) => e > s);
  return { label, highlights };
}

/** The editor selection of a match: its line, the first match's columns in the full line. */
export function matchSelection(m: SearchMatch): vscode.Range {
  const line = Math.max(0, m.line - 1);
  const [s, e] = m.ranges[0] ?? [0, 0];
  return new vscode.Range(line, m.offset + s, line, m.offset + e);
}

export class SearchResultsTree implements vscode.TreeDataProvider<SearchNode>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<SearchNode | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private files: FileNode[] = [];
  private byUri = new Map<string, FileNode>();
  private pending: ReturnType<typeof setTimeout> | undefined;

  /** Starts a new result set (the previous rows go). */
  clear(): void {
    this.files = [];
    this.byUri.clear();
    this.flush();
  }

  get fileCount(): number {
    return this.files.length;
  }

  /** Adds one row; the view is redrawn at most every 150 ms while a search streams. */
  add(folder: vscode.Uri, folderLabel: string | undefined, m: SearchMatch): void {
    const uri = folder.with({ path: path.posix.join(folder.path, m.path) });
    const key = uri.toString();
    let file = this.byUri.get(key);
    if (!file) {
      file = { type: 'searchFile', uri, relPath: m.path, folderLabel, matches: [] };
      this.byUri.set(key, file);
      this.files.push(file);
    }
    file.matches.push({ type: 'searchMatch', file, match: m });
    this.pending ??= setTimeout(() => this.flush(), 150);
  }

  /** Redraws now (end of a search). */
  flush(): void {
    if (this.pending) clearTimeout(this.pending);
    this.pending = undefined;
    this.changeEmitter.fire(undefined);
  }

  /** Every row in display order (the e2e tests and "open first result" use it). */
  allMatches(): MatchNode[] {
    return this.sortedFiles().flatMap((f) => f.matches);
  }

  private sortedFiles(): FileNode[] {
    return [...this.files].sort((a, b) => (a.uri.toString() < b.uri.toString() ? -1 : a.uri.toString() > b.uri.toString() ? 1 : 0));
  }

  getChildren(node?: SearchNode): SearchNode[] {
    if (!node) return this.sortedFiles();
    if (node.type === 'searchFile') return [...node.matches].sort((a, b) => a.match.line - b.match.line);
    return [];
  }

  getParent(node: SearchNode): SearchNode | undefined {
    return node.type === 'searchMatch' ? node.file : undefined;
  }

  getTreeItem(node: SearchNode): vscode.TreeItem {
    if (node.type === 'searchFile') {
      // Labels and descriptions are plain text in a tree row; only control and bidi
      // characters need escaping (a newline in a name would otherwise split the row).
      const item = new vscode.TreeItem(visiblePath(path.posix.basename(node.relPath)), vscode.TreeItemCollapsibleState.Expanded);
      const dir = path.posix.dirname(node.relPath);
      item.description = visiblePath([node.folderLabel, dir === '.' ? '' : dir].filter(Boolean).join(' · '));
      item.tooltip = visiblePath(node.uri.path);
      item.resourceUri = node.uri;
      item.contextValue = 'searchFile';
      item.id = `f:${node.uri.toString()}`;
      return item;
    }
    const { label, highlights } = trimmedLine(node.match);
    const item = new vscode.TreeItem({ label: label || ' ', highlights }, vscode.TreeItemCollapsibleState.None);
    item.description = `:${node.match.line}`;
    item.tooltip = `${visiblePath(node.file.relPath)}:${node.match.line}`;
    item.contextValue = 'searchMatch';
    item.id = `m:${node.file.uri.toString()}:${node.match.line}`;
    item.command = {
      command: 'vscode.open',
      title: 'Open',
      arguments: [node.file.uri, { selection: matchSelection(node.match), preview: true } satisfies vscode.TextDocumentShowOptions],
    };
    return item;
  }

  dispose(): void {
    if (this.pending) clearTimeout(this.pending);
    this.changeEmitter.dispose();
  }
}
