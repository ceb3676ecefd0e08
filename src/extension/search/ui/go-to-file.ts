// Go to File (Remote Folder): a quick pick filled from fs/walk while it lists (../files.ts); the
// pick opens the file. Remote folders are not in Ctrl+P (their file search is a proposed API).
import * as path from 'node:path';
import * as vscode from 'vscode';
// Quick pick labels render `$(icon)`; a file may be named like that (noIcons).
import { noIcons, noLinks } from '../../common';
import { oneAnswer, str } from '../../common/ui';
import type { CommandContext } from '../../environments/ui';
import { listFiles } from '../files';
import { visiblePath } from '../parse';
import { NOT_COVERED, unlessAborted, type RemoteFolder, type SearchFolders } from './folders';

export function registerGoToFile(d: CommandContext, sf: SearchFolders): void {
  d.register('execServer.goToFile', async (args, raw) => {
    const folders = sf.target(args, raw);
    if (folders.length === 0) {
      if (args) throw new Error(`Exec Server: no exec-server folder to list. ${NOT_COVERED}`);
      await sf.explainNoFolder();
      return undefined;
    }
    return goToFile(d, sf, folders, str(args, 'query') ?? '');
  });
}

function goToFile(d: CommandContext, sf: SearchFolders, folders: RemoteFolder[], initial: string): Promise<string | undefined> {
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
    const answer = oneAnswer<string | undefined>(qp, resolve, () => {
      ac.abort();
      if (timer) clearTimeout(timer);
    });
    const finish = answer.finish;
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
            excludeNames: sf.excludedNames(f),
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
      if (answer.done) return;
      if (timer) clearTimeout(timer);
      publish();
      qp.busy = false;
      if (truncated.length) qp.title = `${qp.title} (${visiblePath(truncated.join('; '))})`;
      if (items.length === 0) qp.placeholder = 'No files in this folder';
    });
  });
}
