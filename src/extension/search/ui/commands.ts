// Find in Files / Go to File for exec-server: folders (issue 15 §3). VS Code's own Search
// (Ctrl+Shift+F) and Quick Open (Ctrl+P) only search file: folders (text/file search
// providers for other schemes are a proposed API an installed extension cannot use), so:
//   - Find in Files (Remote Folder): the search runs ON THE HOST through the executor
//     (core/search-run: rg or grep, cancellable); rows stream into the Remote Search view,
//     a click opens the file at the match;
//   - Go to File (Remote Folder): a quick pick filled from fs/walk while it lists (core/search-files);
//   - a one-time notification (and the view's welcome text) says so when an exec-server
//     folder is open, pointing at these two commands.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { CommandContext } from '../../environments/ui';
import { str, strArray, type Args } from '../../common/ui';
import { SEARCH_RESULTS_VIEW, type CommandResult } from '../../common/ui';
import { excludedNamesFromSettings, validateQuery, type SearchQuery } from '../argv';
import { listFiles } from '../files';
// Quick pick labels render `$(icon)`; a file may be named like that (noIcons).
import { noIcons, noLinks } from '../../common';
import { visiblePath } from '../parse';
import { DEFAULT_MAX_RESULTS, searchInFolder, summarize, type SearchOutcome } from '../run';
import { matchSelection, SearchResultsTree } from './view';
import { SCHEME } from '../../common';

const HAS_REMOTE_FOLDER = 'execServer.hasRemoteFolder';
/** Every workspace folder is an exec-server: folder — a remote window: Ctrl+Shift+F, Ctrl+P and Ctrl+` go to the remote versions (package.json keybindings). */
const REMOTE_WINDOW = 'execServer.remoteWindow';
const NOTICE_DISMISSED = 'execServer.search.noticeDismissed';
const NOTICE_SHOWN = 'execServer.search.noticeShown';
const LAST_QUERY = 'execServer.search.lastQuery';
const NOT_COVERED =
  "VS Code's own Search (Ctrl+Shift+F) and Quick Open (Ctrl+P) do not look inside exec-server: folders (remote folders).";

interface RemoteFolder {
  uri: vscode.Uri;
  environment: string;
  label: string;
}

/** `p`, or undefined as soon as `signal` aborts (Cancel must not wait for a slow connect). */
function unlessAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
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

export function registerSearchCommands(d: CommandContext): void {
  const tree = new SearchResultsTree();
  const view = vscode.window.createTreeView(SEARCH_RESULTS_VIEW, { treeDataProvider: tree, showCollapseAll: true });
  d.ctx.subscriptions.push(tree, view);
  let running: AbortController | undefined;

  // Authorities may come back lower-cased (as in the file system provider).
  const environmentOf = (authority: string) =>
    d.store.get(authority)?.name ?? d.store.list().find((e) => e.name.toLowerCase() === authority.toLowerCase())?.name ?? authority;
  const asFolder = (uri: vscode.Uri, label?: string): RemoteFolder => ({ uri, environment: environmentOf(uri.authority), label: label ?? (path.posix.basename(uri.path) || uri.path) });
  /** VS Code's files.exclude and search.exclude (their "**" + "/name" entries) for this folder. */
  const excludedNames = (f: RemoteFolder) =>
    excludedNamesFromSettings([
      vscode.workspace.getConfiguration('files', f.uri).get<Record<string, unknown>>('exclude'),
      vscode.workspace.getConfiguration('search', f.uri).get<Record<string, unknown>>('exclude'),
    ]);
  const openFolders = (): RemoteFolder[] => (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === SCHEME).map((f) => asFolder(f.uri, f.name));

  /** The folder given (args.folder URI string, or a URI from the Explorer's context menu), else every exec-server workspace folder. */
  function targetFolders(args: Args, raw: unknown): RemoteFolder[] {
    const given = raw instanceof vscode.Uri ? raw : str(args, 'folder') ? vscode.Uri.parse(str(args, 'folder')!, true) : undefined;
    if (!given) return openFolders();
    if (given.scheme !== SCHEME) {
      throw new Error(`Exec Server: ${given.toString(true)} is not an exec-server folder — VS Code's own Search (Ctrl+Shift+F) covers local folders`);
    }
    return [asFolder(given)];
  }

  async function explainNoFolder(): Promise<void> {
    const open = 'Open Remote Folder…';
    const pick = await vscode.window.showInformationMessage(
      `Exec Server: no exec-server folder is open. ${NOT_COVERED} Open one first; for local folders use VS Code's own Search.`,
      open,
    );
    if (pick === open) await vscode.commands.executeCommand('execServer.openRemoteFolder');
  }

  d.register('execServer.findInFiles', async (args, raw) => {
    const folders = targetFolders(args, raw);
    if (folders.length === 0) {
      if (args) throw new Error(`Exec Server: no exec-server folder to search. ${NOT_COVERED}`);
      await explainNoFolder();
      return undefined;
    }
    const given = str(args, 'query');
    const last = d.ctx.workspaceState.get<SearchQuery>(LAST_QUERY);
    const query: SearchQuery | undefined = given
      ? { pattern: given, isRegex: args?.isRegex === true, caseSensitive: args?.caseSensitive === true, wholeWord: args?.wholeWord === true, include: strArray(args, 'include') }
      : await askQuery(folders, { ...last, pattern: selectedText() ?? last?.pattern ?? '' });
    if (!query) return undefined;
    try {
      validateQuery(query); // bad input: a clear error before anything starts
    } catch (e) {
      throw new Error(`Exec Server: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!given) await d.ctx.workspaceState.update(LAST_QUERY, { ...query, include: undefined });
    const max = typeof args?.maxResults === 'number' && args.maxResults > 0 ? Math.floor(args.maxResults) : DEFAULT_MAX_RESULTS;
    return runSearch(folders, query, max, !given);
  });

  d.register('execServer.clearSearchResults', () => {
    running?.abort();
    tree.clear();
    view.message = undefined;
    return true;
  });

  d.register('execServer.goToFile', async (args, raw) => {
    const folders = targetFolders(args, raw);
    if (folders.length === 0) {
      if (args) throw new Error(`Exec Server: no exec-server folder to list. ${NOT_COVERED}`);
      await explainNoFolder();
      return undefined;
    }
    return goToFile(folders, str(args, 'query') ?? '');
  });

  function selectedText(): string | undefined {
    const e = vscode.window.activeTextEditor;
    if (!e || e.selection.isEmpty || e.selection.start.line !== e.selection.end.line) return undefined;
    return e.document.getText(e.selection) || undefined;
  }

  /** The query with its three toggles (buttons in the title bar; the prompt says which are on). */
  function askQuery(folders: RemoteFolder[], initial: SearchQuery): Promise<SearchQuery | undefined> {
    const q = { caseSensitive: !!initial.caseSensitive, wholeWord: !!initial.wholeWord, isRegex: !!initial.isRegex };
    const box = vscode.window.createInputBox();
    const toggles = [
      { key: 'caseSensitive' as const, icon: 'case-sensitive', name: 'Match Case' },
      { key: 'wholeWord' as const, icon: 'whole-word', name: 'Match Whole Word' },
      { key: 'isRegex' as const, icon: 'regex', name: 'Use Regular Expression' },
    ];
    const buttonOf = new Map<vscode.QuickInputButton, (typeof toggles)[number]>();
    const render = () => {
      buttonOf.clear();
      box.buttons = toggles.map((t) => {
        const b = { iconPath: new vscode.ThemeIcon(q[t.key] ? 'pass-filled' : t.icon), tooltip: `${t.name}: ${q[t.key] ? 'on' : 'off'}` };
        buttonOf.set(b, t);
        return b;
      });
      const on = toggles.filter((t) => q[t.key]).map((t) => t.name);
      // The prompt renders links and $(icons); the folder paths are the host's names.
      box.prompt = `Runs on the host (ripgrep or grep) in ${noIcons(noLinks(visiblePath(folders.map((f) => `${f.environment}:${f.uri.path}`).join(', '))))}${on.length ? ` · ${on.join(', ')}` : ''}`;
    };
    box.title = 'Find in Files (Remote Folder)';
    box.placeholder = 'Text to find (the buttons toggle case, whole word, regular expression)';
    box.value = initial.pattern;
    box.valueSelection = [0, initial.pattern.length];
    render();
    return new Promise((resolve) => {
      let done = false;
      const finish = (v: SearchQuery | undefined) => {
        if (done) return;
        done = true;
        resolve(v);
        box.dispose();
      };
      box.onDidTriggerButton((b) => {
        const t = buttonOf.get(b);
        if (t) q[t.key] = !q[t.key];
        render();
      });
      box.onDidChangeValue(() => (box.validationMessage = undefined));
      box.onDidAccept(() => {
        if (box.value === '') {
          box.validationMessage = 'Type the text to find';
          return;
        }
        finish({ pattern: box.value, ...q });
      });
      box.onDidHide(() => finish(undefined));
      box.show();
    });
  }

  async function runSearch(folders: RemoteFolder[], query: SearchQuery, maxResults: number, interactive: boolean): Promise<CommandResult<'execServer.findInFiles'>> {
    running?.abort();
    const ac = new AbortController();
    running = ac;
    tree.clear();
    const where = folders.map((f) => `${f.environment}:${f.uri.path}`).join(', ');
    view.message = `Searching for “${visiblePath(query.pattern)}” in ${visiblePath(where)}…`;
    await vscode.commands.executeCommand(`${SEARCH_RESULTS_VIEW}.focus`).then(undefined, () => undefined);
    const outcomes: SearchOutcome[] = [];
    const failures: string[] = [];
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Exec Server: searching for “${noLinks(visiblePath(query.pattern))}”`, cancellable: true },
      async (progress, token) => {
        token.onCancellationRequested(() => ac.abort());
        let left = maxResults;
        for (const f of folders) {
          if (ac.signal.aborted) break;
          progress.report({ message: noLinks(visiblePath(`${f.environment}:${f.uri.path}`)) }); // a notification: the host's folder name is no link
          try {
            const client = await unlessAborted(d.clientFor(f.environment), ac.signal);
            if (!client) break;
            const label = folders.length > 1 ? f.label : undefined;
            const o = await searchInFolder(client, f.uri.path, { ...query, excludeNames: excludedNames(f) }, { maxResults: left, signal: ac.signal, onMatch: (m) => tree.add(f.uri, label, m) });
            d.log.info(`find in files: ${o.argv.map((a) => JSON.stringify(a)).join(' ')} in ${f.environment}:${f.uri.path} → ${summarize(o)}${o.errors.length ? ` (${o.errors.slice(0, 3).join('; ')})` : ''}`);
            outcomes.push(o);
            left = Math.max(0, left - o.matches.length);
          } catch (e) {
            const msg = e instanceof Error ? e.message : String(e);
            d.log.error(`find in files in ${f.environment}:${f.uri.path}: ${msg}`);
            failures.push(`${f.environment}:${f.uri.path}: ${msg}`);
          }
        }
      },
    );
    if (running === ac) running = undefined;
    tree.flush();
    const total = merge(outcomes, ac.signal.aborted);
    const summary = failures.length && !total.matches.length ? `Search failed: ${failures[0]}` : summarize(total) + (failures.length ? ` — ${failures.length} folder(s) failed` : '');
    view.message = `${visiblePath(summary)} · “${visiblePath(query.pattern)}” (${total.tool ?? 'search'} on the host)`;
    // Notifications make [x](command:…) a link: the summary quotes the host's tool (file names in its errors).
    if (interactive && (total.failure || failures.length) && !total.matches.length) void vscode.window.showErrorMessage(`Exec Server: ${noLinks(visiblePath(summary))}`);
    else if (interactive && !total.matches.length && !total.cancelled) void vscode.window.showInformationMessage(noLinks(`Exec Server: no results for “${visiblePath(query.pattern)}” in ${visiblePath(where)}`));
    return {
      summary,
      tool: total.tool,
      matches: total.matches.length,
      files: tree.fileCount,
      notShown: total.notShown,
      cancelled: total.cancelled,
      failure: total.failure ?? failures[0],
      incomplete: total.incomplete,
      rows: tree.allMatches().map((n) => ({ uri: n.file.uri.toString(), line: n.match.line, column: matchSelection(n.match).start.character + 1, text: n.match.text })),
    };
  }

  function goToFile(folders: RemoteFolder[], initial: string): Promise<string | undefined> {
    type Item = vscode.QuickPickItem & { uri: vscode.Uri };
    const qp = vscode.window.createQuickPick<Item>();
    const ac = new AbortController();
    qp.title = `Go to File (Remote Folder) — ${visiblePath(folders.map((f) => `${f.environment}:${f.uri.path}`).join(', '))}`;
    qp.placeholder = 'File name (remote folders are not in Ctrl+P: listed from the host)';
    qp.matchOnDescription = true;
    qp.busy = true;
    qp.value = initial;
    const items: Item[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const publish = () => {
      timer = undefined;
      qp.items = items.slice();
    };
    const truncated: string[] = [];
    return new Promise((resolve) => {
      let done = false;
      const finish = (v: string | undefined) => {
        if (done) return;
        done = true;
        ac.abort();
        if (timer) clearTimeout(timer);
        resolve(v);
        qp.dispose();
      };
      qp.onDidAccept(async () => {
        const pick = qp.selectedItems[0] ?? qp.activeItems[0];
        if (!pick) return;
        finish(pick.uri.toString());
        await vscode.window.showTextDocument(pick.uri, { preview: true }).then(undefined, (e: Error) => void vscode.window.showErrorMessage(noLinks(`Exec Server: cannot open ${visiblePath(pick.uri.path)}: ${e.message}`)));
      });
      qp.onDidHide(() => finish(undefined));
      qp.show();
      void Promise.all(
        folders.map(async (f) => {
          try {
            const client = await unlessAborted(d.clientFor(f.environment), ac.signal);
            if (!client) return;
            const o = await listFiles(client, f.uri.path, {
              excludeNames: excludedNames(f),
              signal: ac.signal,
              onBatch: (files) => {
                for (const rel of files) {
                  const dir = path.posix.dirname(rel);
                  items.push({
                    label: noIcons(visiblePath(path.posix.basename(rel))),
                    description: noIcons(visiblePath([folders.length > 1 ? f.label : '', dir === '.' ? '' : dir].filter(Boolean).join(' · '))),
                    uri: f.uri.with({ path: path.posix.join(f.uri.path, rel) }),
                  });
                }
                timer ??= setTimeout(publish, 100);
              },
            });
            if (o.truncated) truncated.push(`${f.label}: first ${o.files.length} files`);
            if (o.unreadable) truncated.push(`${f.label}: ${o.unreadable} not readable`);
            d.log.info(`go to file: ${o.files.length} files in ${f.environment}:${f.uri.path}${o.truncated ? ' (truncated)' : ''}${o.unreadable ? `, ${o.unreadable} unreadable` : ''}`);
          } catch (e) {
            const msg = e instanceof Error ? e.message : String(e);
            d.log.error(`go to file in ${f.environment}:${f.uri.path}: ${msg}`);
            truncated.push(`${f.label}: ${msg}`);
          }
        }),
      ).then(() => {
        if (done) return;
        if (timer) clearTimeout(timer);
        publish();
        qp.busy = false;
        if (truncated.length) qp.title = `${qp.title} (${visiblePath(truncated.join('; '))})`;
        if (items.length === 0) qp.placeholder = 'No files in this folder';
      });
    });
  }

  // Say it where users look: once per workspace when an exec-server folder is open (until
  // "Don't Show Again"), and always in the Remote Search view's welcome text.
  const update = () => {
    const has = openFolders().length > 0;
    void vscode.commands.executeCommand('setContext', HAS_REMOTE_FOLDER, has);
    const folders = vscode.workspace.workspaceFolders ?? [];
    void vscode.commands.executeCommand('setContext', REMOTE_WINDOW, folders.length > 0 && folders.every((f) => f.uri.scheme === SCHEME));
    if (!has || d.ctx.globalState.get(NOTICE_DISMISSED) || d.ctx.workspaceState.get(NOTICE_SHOWN)) return;
    void d.ctx.workspaceState.update(NOTICE_SHOWN, true);
    const find = 'Find in Files';
    const go = 'Go to File';
    const never = "Don't Show Again";
    void vscode.window.showInformationMessage(`Exec Server: ${NOT_COVERED} Use Find in Files (Remote Folder) and Go to File (Remote Folder).`, find, go, never).then((pick) => {
      if (pick === find) void vscode.commands.executeCommand('execServer.findInFiles');
      else if (pick === go) void vscode.commands.executeCommand('execServer.goToFile');
      else if (pick === never) void d.ctx.globalState.update(NOTICE_DISMISSED, true);
    });
  };
  d.ctx.subscriptions.push(vscode.workspace.onDidChangeWorkspaceFolders(update));
  update();
}

/** One outcome over several folders. */
function merge(os: SearchOutcome[], cancelled: boolean): SearchOutcome & { tool: SearchOutcome['tool'] | undefined } {
  const failure = os.length > 0 && os.every((o) => o.failure) ? os[0].failure : undefined;
  return {
    tool: os[0]?.tool as SearchOutcome['tool'],
    argv: os[0]?.argv ?? [],
    matches: os.flatMap((o) => o.matches),
    files: os.reduce((n, o) => n + o.files, 0),
    notShown: os.reduce((n, o) => n + o.notShown, 0),
    stoppedAtCountLimit: os.some((o) => o.stoppedAtCountLimit),
    cancelled: cancelled || os.some((o) => o.cancelled),
    exitCode: os[0]?.exitCode,
    errors: os.flatMap((o) => o.errors).slice(0, 20),
    failure,
    incomplete: os.find((o) => o.incomplete)?.incomplete,
  };
}
