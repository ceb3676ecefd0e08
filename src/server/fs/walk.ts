// fs/walk: breadth-first, names sorted per directory, same limits and shapes as the
// reference (root counts as the first directory; maxDepth 0 lists only the root's
// children; symlinks skipped unless following directory symlinks; non-file/non-dir
// entries left out; per-directory errors reported, not fatal; cycles not re-entered).
import fs from 'node:fs';
import path from 'node:path';
import { invalidRequest } from '../../protocol/errors';
import type { FsWalkOptions, FsWalkResult } from '../../protocol/types';
import { fsError, osMessage } from '../os-errors';
import { pathToUri } from '../paths';

export const WALK_MAX_DEPTH = 64;
export const WALK_MAX_DIRECTORIES = 10_000;
export const WALK_MAX_ENTRIES = 50_000;
export const WALK_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

export function checkWalkLimits(o: FsWalkOptions): void {
  if (o.maxDepth > WALK_MAX_DEPTH || o.maxDirectories > WALK_MAX_DIRECTORIES || o.maxEntries > WALK_MAX_ENTRIES) {
    throw invalidRequest(
      `filesystem walk limits exceed maximums: depth=${WALK_MAX_DEPTH}, directories=${WALK_MAX_DIRECTORIES}, entries=${WALK_MAX_ENTRIES}`,
    );
  }
  if (o.maxDirectories === 0 || o.maxEntries === 0) {
    throw invalidRequest('filesystem walk limits must be greater than zero');
  }
}

/**
 * `canEnter`: a managed sandbox's read check (../sandbox/fs-guard.ts); a directory it refuses
 * is reported as a per-directory EACCES error instead of being listed, as a walk inside the
 * sandbox would see it. `pinned` (Linux): each directory is opened first (without following a
 * link unless directory links are followed), `canEnter` is given where the open directory
 * really is (/proc/self/fd/N), and the listing is read from that descriptor — a directory
 * swapped for a symlink after it was queued is never listed in its place.
 */
export async function walk(root: string, o: FsWalkOptions, canEnter?: (dir: string) => boolean, pinned = false): Promise<FsWalkResult> {
  checkWalkLimits(o);
  let rootStat: fs.Stats;
  try {
    rootStat = await fs.promises.stat(root);
  } catch (e) {
    throw fsError(e);
  }
  const result: FsWalkResult = { entries: [], errors: [], truncated: false };
  if (!rootStat.isDirectory()) return result;

  const visited = new Set<string>();
  const realRoot = await fs.promises.realpath(root).catch(() => root);
  visited.add(realRoot);
  const queue: { dir: string; depth: number }[] = [{ dir: root, depth: 0 }];
  let dirsRead = 0;
  let bytes = 64;
  for (let qi = 0; qi < queue.length; qi++) {
    if (dirsRead >= o.maxDirectories) {
      result.truncated = true;
      break;
    }
    dirsRead++;
    const { dir, depth } = queue[qi];
    const denied = () => Object.assign(new Error('EACCES'), { code: 'EACCES' });
    if (canEnter && !pinned && dir !== root && !canEnter(dir)) {
      result.errors.push({ path: pathToUri(dir), message: osMessage(denied()) });
      continue;
    }
    let fh: fs.promises.FileHandle | undefined;
    /** Where the listing is read: the directory's path, or its pinned descriptor. */
    let listed = dir;
    let dirents: fs.Dirent[];
    try {
      if (pinned) {
        const noFollow = dir !== root && !o.followDirectorySymlinks ? fs.constants.O_NOFOLLOW : 0;
        fh = await fs.promises.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | noFollow);
        if (canEnter && !canEnter(fs.readlinkSync(`/proc/self/fd/${fh.fd}`))) throw denied();
        listed = `/proc/self/fd/${fh.fd}`;
      }
      // Dirent types come with the listing: only symlinks need an extra stat.
      dirents = (await fs.promises.readdir(listed, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } catch (e) {
      await fh?.close().catch(() => undefined);
      if (dir === root) throw fsError(e);
      result.errors.push({ path: pathToUri(dir), message: osMessage(e) });
      continue;
    }
    try {
      if (await listDirectory(dir, listed, depth, dirents)) return result;
    } finally {
      await fh?.close().catch(() => undefined);
    }
  }
  return result;

  /** Adds one directory's entries (and queues its subdirectories); true when a limit ended the walk. */
  async function listDirectory(dir: string, listed: string, depth: number, dirents: fs.Dirent[]): Promise<boolean> {
    for (const dirent of dirents) {
      const name = dirent.name;
      const full = path.join(dir, name);
      let isDir = dirent.isDirectory();
      let isFile = dirent.isFile();
      if (dirent.isSymbolicLink()) {
        if (!o.followDirectorySymlinks) continue;
        try {
          isDir = (await fs.promises.stat(path.join(listed, name))).isDirectory();
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') result.errors.push({ path: pathToUri(full), message: osMessage(e) });
          continue; // dangling link
        }
        if (!isDir) continue; // only directory symlinks are followed
        isFile = false;
      }
      const kind = isDir ? 'directory' : isFile ? 'file' : undefined;
      if (!kind) continue;
      if (result.entries.length >= o.maxEntries) {
        result.truncated = true;
        return true;
      }
      const uri = pathToUri(full);
      bytes += uri.length + 32;
      if (bytes > WALK_MAX_RESPONSE_BYTES) {
        result.truncated = true;
        return true;
      }
      result.entries.push({ path: uri, kind });
      if (kind !== 'directory' || depth >= o.maxDepth) continue;
      if (o.pruneHiddenDirectories && name.startsWith('.')) continue;
      if (o.followDirectorySymlinks) {
        // Only followed links can make cycles or a second route to a directory.
        const real = await fs.promises.realpath(full).catch(() => full);
        if (visited.has(real)) continue;
        visited.add(real);
      }
      queue.push({ dir: full, depth: depth + 1 });
    }
    return false;
  }
}
