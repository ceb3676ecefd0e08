// Find in Files / Go to File for exec-server folders (docs/extension.md, "What it does"), in the real workbench: a
// remote folder served by the project's CLI on loopback is searched on the host (grep or rg
// through the executor), the rows show in the Remote Search view (names with markup as plain
// text), a click on a row opens the file at the line and column; Go to File fills a quick pick
// from fs/walk (no node_modules/.git), typing filters, Enter opens; the view says that VS
// Code's own search does not cover exec-server folders.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { answerApprovalIfShown } from './approval';
import { test } from './framework';
import { RemoteServer } from './remote-server';
import { quickInput, uiClick, uiScreenshot, uiTexts } from './ux-driver';
import { assert, assertEqual, expectReject, freshDir, uniqueName, waitFor, waitForFile } from './util';
import { cmdline, isAlive } from '../../support/process';

const VIEW = '[id="workbench.view.extension.execServer"]';
const ROWS = `${VIEW} .monaco-list-row`;
const SCHEME = 'exec-server';
const MARKUP = '<img src=x onerror=alert(1)><b>bold[x](command:workbench.action.quit).txt';

interface FindResult {
  summary: string;
  tool?: string;
  matches: number;
  files: number;
  notShown: number;
  cancelled: boolean;
  failure?: string;
  /** Set when the host did not confirm the end of the search process (cancel grace over, connection lost). */
  incomplete?: string;
  rows: { uri: string; line: number; column: number; text: string }[];
}

/**
 * How long a search may take to end after Cancel, and its process to be gone from the host: the
 * cancel grace (3 s, core/search-run) plus slack for a starved machine. A search that ignored
 * Cancel would run its stand-in (sleep 300) far longer than this.
 */
const ENDS_AFTER_CANCEL_MS = 30_000;

/**
 * A remote environment (the CLI on 127.0.0.1) with a folder added to this window; removed
 * afterwards. Each call starts its own server, so its client (and the search tool it probed) is
 * fresh: no test depends on what another test ran. `pathPrefix`: put first in that server's PATH.
 */
async function withRemoteFolder(
  prefix: string,
  fill: (dir: string) => void,
  body: (env: string, dir: string, uri: vscode.Uri) => Promise<void>,
  opts: { pathPrefix?: string } = {},
): Promise<void> {
  const server = new RemoteServer();
  const env = uniqueName(prefix);
  const dir = freshDir(prefix);
  fill(dir);
  const uri = vscode.Uri.from({ scheme: SCHEME, authority: env, path: dir });
  try {
    // The server copies this process's environment when it is spawned, synchronously inside
    // start(): PATH is changed for that instant only, not for the extension host's Local server.
    const oldPath = process.env.PATH;
    if (opts.pathPrefix) process.env.PATH = `${opts.pathPrefix}:${oldPath}`;
    let started: Promise<string>;
    try {
      started = server.start(0);
    } finally {
      process.env.PATH = oldPath;
    }
    await started;
    await vscode.commands.executeCommand('execServer.addEnvironment', { name: env, url: server.url, token: server.token });
    await vscode.commands.executeCommand('execServer.openRemoteFolder', { environment: env, path: dir });
    await waitFor('the remote folder in the workspace', () => vscode.workspace.workspaceFolders?.some((f) => f.uri.toString() === uri.toString()));
    await body(env, dir, uri);
  } finally {
    const i = (vscode.workspace.workspaceFolders ?? []).findIndex((f) => f.uri.toString() === uri.toString());
    if (i >= 0) vscode.workspace.updateWorkspaceFolders(i, 1);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors').then(undefined, () => undefined);
    await vscode.commands.executeCommand('execServer.removeEnvironment', { name: env }).then(undefined, () => undefined);
    await server.stop();
  }
}

export function registerSearchTests(): void {
  test('remote search: Find in Files runs on the host; rows in the Remote Search view (markup names as text); a click opens the file at the line and column', async () => {
    const token = `needle${Date.now().toString(36)}`;
    await withRemoteFolder('search-find', (dir) => {
      mkdirSync(path.join(dir, 'src'), { recursive: true });
      mkdirSync(path.join(dir, 'node_modules', 'dep'), { recursive: true });
      writeFileSync(path.join(dir, 'src', 'app.ts'), `// app\nexport {};\n  const ${token} = 1;\n`);
      writeFileSync(path.join(dir, MARKUP), `see ${token} here\n`);
      writeFileSync(path.join(dir, 'node_modules', 'dep', 'index.js'), `${token}\n`);
    }, async (_env, dir, folder) => {
      // Typed into the real input box, as a user would.
      const done = Promise.resolve(vscode.commands.executeCommand('execServer.findInFiles'));
      await quickInput({ waitTitle: 'Find in Files (Remote Folder)', fill: token, press: 'Enter' });
      const r = (await done) as FindResult;
      const mine = r.rows.filter((x) => x.uri.startsWith(folder.toString()));
      assertEqual(
        mine.map((x) => [vscode.Uri.parse(x.uri).path.slice(dir.length + 1), x.line, x.column]).sort(),
        [[MARKUP, 1, 5], ['src/app.ts', 3, 9]].sort(),
        `rows of the remote folder (node_modules skipped; summary "${r.summary}")`,
      );
      assert(!r.failure && !r.cancelled, `search finished (${r.summary})`);

      // The rows in the view: the markup name is shown as its literal text (no bold, no link).
      const rows = await uiTexts(ROWS, 'app.ts');
      assert(rows.some((t) => t.includes(MARKUP)), `the markup file name shows literally (rows ${JSON.stringify(rows)})`);
      assert(rows.some((t) => t.includes(`const ${token} = 1;`)), `the matching line is a row (rows ${JSON.stringify(rows)})`);
      await uiScreenshot('remote-search');

      await uiClick(`${ROWS}:has-text("const ${token}")`);
      const editor = await waitFor('the clicked match open in an editor', () => {
        const e = vscode.window.activeTextEditor;
        return e?.document.uri.toString() === vscode.Uri.from({ scheme: SCHEME, authority: folder.authority, path: `${dir}/src/app.ts` }).toString() && e;
      }, 20_000);
      assertEqual([editor.selection.start.line, editor.selection.start.character, editor.selection.end.character], [2, 8, 8 + token.length], 'selection on the match');
    });
  }, 120_000);

  test('remote search: Go to File lists the remote folder in a quick pick (no node_modules/.git), typing filters, Enter opens the file', async () => {
    await withRemoteFolder('search-goto', (dir) => {
      for (const f of ['src/main.ts', 'src/util/strings.ts', 'README.md', 'node_modules/dep/skipme.js', '.git/HEAD']) {
        mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
        writeFileSync(path.join(dir, f), `${f}\n`);
      }
    }, async (_env, dir, folder) => {
      const done = Promise.resolve(vscode.commands.executeCommand('execServer.goToFile', { folder: folder.toString() }));
      let s = await quickInput({ waitTitle: 'Go to File (Remote Folder)', waitBusy: false, waitItem: 'strings.ts' });
      const all = s.items.join(' | ');
      for (const want of ['main.ts', 'strings.ts', 'README.md']) assert(all.includes(want), `"${want}" listed (items: ${all})`);
      for (const not of ['skipme.js', 'HEAD']) assert(!all.includes(not), `"${not}" not listed (items: ${all})`);
      await uiScreenshot('remote-go-to-file');
      s = await quickInput({ waitTitle: 'Go to File', fill: 'strts', settleMs: 600 });
      assert(s.items.length >= 1 && s.items[0].includes('strings.ts'), `fuzzy filter keeps strings.ts first (items ${JSON.stringify(s.items)})`);
      await quickInput({ waitTitle: 'Go to File', press: 'Enter' });
      const opened = (await done) as string | undefined;
      const want = vscode.Uri.from({ scheme: SCHEME, authority: folder.authority, path: `${dir}/src/util/strings.ts` }).toString();
      assertEqual(opened, want, 'the command resolves with the picked file');
      await waitFor('the picked file in the editor', () => vscode.window.activeTextEditor?.document.uri.toString() === want);
      assertEqual(vscode.window.activeTextEditor!.document.getText(), 'src/util/strings.ts\n', 'its text (read through the executor)');
    });
  }, 120_000);

  // The search tool is a stand-in here (a script named rg/grep that records its pid and sleeps):
  // a real search ends too fast for a click to land while it runs. The stand-ins come first in
  // the PATH of this test's own server (whichever tool its fresh client picks, a stand-in runs);
  // the extension host's PATH and the Local environment are left alone. What is tested is what
  // the user sees: Cancel on the progress notification ends the search promptly, the result says
  // cancelled, and the search's process is gone from the host.
  test('remote search: Cancel on the progress notification stops the search and its process on the host', async () => {
    const bin = freshDir('search-standin');
    const pidFile = path.join(bin, 'pid');
    const script = `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "ripgrep 0.0.0 (stand-in)"; exit 0; fi\necho $$ > '${pidFile}.tmp' && mv '${pidFile}.tmp' '${pidFile}'\nexec sleep 300\n`;
    for (const name of ['rg', 'grep']) writeFileSync(path.join(bin, name), script, { mode: 0o755 });
    const token = uniqueName('cancelme');
    let pid = 0;
    try {
      await withRemoteFolder('search-cancel', (dir) => writeFileSync(path.join(dir, 'a.txt'), 'x\n'), async (_env, _dir, folder) => {
        let result: FindResult | undefined;
        let error: unknown;
        const done = Promise.resolve(vscode.commands.executeCommand('execServer.findInFiles', { query: token, folder: folder.toString() })).then(
          (r) => (result = r as FindResult),
          (e) => (error = e ?? new Error('rejected')),
        );
        pid = Number((await waitForFile(pidFile, (t) => /^\d+\s*$/.test(t))).trim());
        assert(isAlive(pid), `the search process ${pid} runs`);
        const click = await answerApprovalIfShown('Cancel', { contains: token });
        assert(click.clicked, `Cancel clicked on the progress notification (${click.error ?? click.text})`);
        await waitFor('the search to end after Cancel', () => result !== undefined || error !== undefined, ENDS_AFTER_CANCEL_MS, 50);
        await done;
        if (error) throw error;
        const r = result!;
        assert(r.cancelled, `the result says cancelled (${r.summary})`);
        assert(/cancelled/.test(r.summary), `the summary says so (${r.summary})`);
        // On a starved host the end may be unconfirmed within the cancel grace: then it says so.
        assert(!r.incomplete || /did not confirm/.test(r.incomplete), `nothing else is incomplete (${r.incomplete})`);
        await waitFor(`the search process ${pid} gone from the host after Cancel`, () => !isAlive(pid), ENDS_AFTER_CANCEL_MS, 50);
      }, { pathPrefix: bin });
    } finally {
      if (pid && isAlive(pid) && cmdline(pid).includes('sleep')) process.kill(pid, 'SIGKILL'); // a failed run leaves no sleep behind
    }
  }, 150_000);

  test('remote search: the view says VS Code search does not cover exec-server folders; a non-remote folder is refused with a message', async () => {
    await vscode.commands.executeCommand('execServer.clearSearchResults');
    await vscode.commands.executeCommand('execServer.searchResults.focus');
    const texts = await uiTexts(`${VIEW} .welcome-view-content`, 'do not look inside exec-server');
    assert(texts.some((t) => /Ctrl\+Shift\+F/.test(t)), `the welcome text names VS Code's Search (${JSON.stringify(texts)})`);
    const err = await expectReject('searching a file: folder', () =>
      Promise.resolve(vscode.commands.executeCommand('execServer.findInFiles', { query: 'x', folder: vscode.Uri.file(freshDir('search-local')).toString() })));
    assert(/not an exec-server folder/.test(err.message), `the error says why (${err.message})`);
    const emptyDir = freshDir('search-nothing');
    writeFileSync(path.join(emptyDir, 'a.txt'), 'hay\n');
    const none = (await vscode.commands.executeCommand('execServer.findInFiles', {
      query: 'needle-not-there',
      folder: vscode.Uri.from({ scheme: SCHEME, authority: 'Local', path: emptyDir }).toString(),
    })) as FindResult;
    assert(/^No results/.test(none.summary) && none.matches === 0 && !none.failure, `nothing found is said plainly (${none.summary})`);
    const message = await uiTexts(`${VIEW} .message`, 'No results');
    assert(message.some((t) => t.includes('needle-not-there')), `the view's message names the query (${JSON.stringify(message)})`);
    const rows = await uiTexts(`${VIEW} .monaco-list-row`);
    assert(!rows.some((t) => t.includes('a.txt')), `no rows for it (${JSON.stringify(rows)})`);
    const multi = await expectReject('a query of two lines', () =>
      Promise.resolve(vscode.commands.executeCommand('execServer.findInFiles', { query: 'a\nb', folder: 'exec-server://Local/tmp' })));
    assert(/single line/.test(multi.message), `bad input is refused before anything runs (${multi.message})`);
  });
}
