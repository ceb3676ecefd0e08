// Find in Files (Remote Folder): the query (with its case / whole word / regex toggles) asked in
// an input box, the search run ON THE HOST through the executor (../run.ts: rg or grep,
// cancellable), its rows streamed into the Remote Search view (./view.ts); a click opens the
// file at the match.
import * as vscode from 'vscode';
import { noIcons, noLinks } from '../../common';
import { oneAnswer, SEARCH_RESULTS_VIEW, str, strArray, type CommandResult } from '../../common/ui';
import type { CommandContext } from '../../environments/ui';
import { validateQuery, type SearchQuery } from '../argv';
import { visiblePath } from '../parse';
import { DEFAULT_MAX_RESULTS, searchInFolder, summarize, type SearchOutcome } from '../run';
import { unlessAborted, NOT_COVERED, type RemoteFolder, type SearchFolders } from './folders';
import { matchSelection, type SearchResultsTree } from './view';

const LAST_QUERY = 'execServer.search.lastQuery';

interface FindState {
  d: CommandContext;
  folders: SearchFolders;
  tree: SearchResultsTree;
  view: vscode.TreeView<unknown>;
  /** The search in progress (a new one or Clear cancels it). */
  running?: AbortController;
}

export function registerFindInFiles(d: CommandContext, folders: SearchFolders, tree: SearchResultsTree, view: vscode.TreeView<unknown>): void {
  const s: FindState = { d, folders, tree, view };
  s.d.register('execServer.findInFiles', async (args, raw) => {
    const folders = s.folders.target(args, raw);
    if (folders.length === 0) {
      if (args) throw new Error(`Exec Server: no exec-server folder to search. ${NOT_COVERED}`);
      await s.folders.explainNoFolder();
      return undefined;
    }
    const given = str(args, 'query');
    const last = s.d.ctx.workspaceState.get<SearchQuery>(LAST_QUERY);
    const query: SearchQuery | undefined = given
      ? { pattern: given, isRegex: args?.isRegex === true, caseSensitive: args?.caseSensitive === true, wholeWord: args?.wholeWord === true, include: strArray(args, 'include') }
      : await askQuery(folders, { ...last, pattern: selectedText() ?? last?.pattern ?? '' });
    if (!query) return undefined;
    try {
      validateQuery(query); // bad input: a clear error before anything starts
    } catch (e) {
      throw new Error(`Exec Server: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!given) await s.d.ctx.workspaceState.update(LAST_QUERY, { ...query, include: undefined });
    const max = typeof args?.maxResults === 'number' && args.maxResults > 0 ? Math.floor(args.maxResults) : DEFAULT_MAX_RESULTS;
    return runSearch(s, folders, query, max, !given);
  });

  s.d.register('execServer.clearSearchResults', () => {
    s.running?.abort();
    tree.clear();
    view.message = undefined;
    return true;
  });
}

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
    const answer = oneAnswer<SearchQuery | undefined>(box, resolve);
    const finish = answer.finish;
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

async function runSearch(s: FindState, folders: RemoteFolder[], query: SearchQuery, maxResults: number, interactive: boolean): Promise<CommandResult<'execServer.findInFiles'>> {
  const { d, tree, view } = s;
  s.running?.abort();
  const ac = new AbortController();
  s.running = ac;
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
          const o = await searchInFolder(client, f.uri.path, { ...query, excludeNames: s.folders.excludedNames(f) }, { maxResults: left, signal: ac.signal, onMatch: (m) => tree.add(f.uri, label, m) });
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
  if (s.running === ac) s.running = undefined;
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
