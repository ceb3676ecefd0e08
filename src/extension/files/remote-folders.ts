// Open Remote Folder without the UI: POSIX path steps of the folder browser, the rows it shows
// for a directory listing, and the recent-folders list kept in globalState. Free of `vscode`.

/** A remote folder the user opened: environment + absolute path. */
export interface RecentFolder {
  environment: string;
  path: string;
}

export const MAX_RECENT_FOLDERS = 10;

/** Normalizes an absolute POSIX path ('.', '..', duplicate and trailing slashes). */
export function normalizePath(p: string): string {
  if (!p.startsWith('/')) throw new Error(`"${p}" is not an absolute path (it must start with /)`);
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return `/${out.join('/')}`;
}

export function parentPath(p: string): string {
  return normalizePath(`${normalizePath(p)}/..`);
}

export function childPath(dir: string, name: string): string {
  if (name.includes('/') || name === '' || name === '.' || name === '..') throw new Error(`"${name}" is not a folder name`);
  return normalizePath(`${dir}/${name}`);
}

/** What typing in the browser means: an absolute path jumps there; anything else filters. */
export function typedPath(value: string): string | undefined {
  const v = value.trim();
  return v.startsWith('/') ? normalizePath(v) : undefined;
}

export type BrowserRow = { kind: 'accept'; path: string } | { kind: 'up'; path: string } | { kind: 'folder'; name: string; path: string };

/**
 * Rows of the browser for `dir`: "open this folder", ".." (not at /), then its sub-folders
 * (symlinks to folders count; hidden ones last), sorted case-insensitively.
 */
export function browserRows(dir: string, entries: readonly { fileName: string; isDirectory: boolean }[]): BrowserRow[] {
  const here = normalizePath(dir);
  const rows: BrowserRow[] = [{ kind: 'accept', path: here }];
  if (here !== '/') rows.push({ kind: 'up', path: parentPath(here) });
  const folders = entries
    .filter((e) => e.isDirectory && e.fileName !== '.' && e.fileName !== '..' && !e.fileName.includes('/'))
    .map((e) => e.fileName)
    .sort((a, b) => Number(a.startsWith('.')) - Number(b.startsWith('.')) || a.localeCompare(b, undefined, { sensitivity: 'base' }));
  for (const name of folders) rows.push({ kind: 'folder', name, path: childPath(here, name) });
  return rows;
}

/** The list after opening `folder`: it moves to the front, duplicates go, at most MAX_RECENT_FOLDERS. */
export function addRecentFolder(list: unknown, folder: RecentFolder): RecentFolder[] {
  const valid = readRecentFolders(list).filter((f) => !(f.environment === folder.environment && f.path === folder.path));
  return [folder, ...valid].slice(0, MAX_RECENT_FOLDERS);
}

/** globalState is untrusted (older versions, hand edits): keep only well-formed entries. */
export function readRecentFolders(list: unknown): RecentFolder[] {
  if (!Array.isArray(list)) return [];
  return list.filter(
    (f): f is RecentFolder => !!f && typeof f === 'object' && typeof (f as RecentFolder).environment === 'string' && typeof (f as RecentFolder).path === 'string' && (f as RecentFolder).path.startsWith('/'),
  );
}

/**
 * Adding a folder restarts the extension host (VS Code reloads the window and every Exec Server
 * terminal closes) when the window has no folder yet or a single folder without a workspace
 * file (it becomes an untitled multi-root workspace).
 */
export function addingFolderReloads(folderCount: number, hasWorkspaceFile: boolean): boolean {
  return folderCount === 0 || !hasWorkspaceFile;
}
