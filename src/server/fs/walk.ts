// fs/walk: breadth-first, names sorted per directory, same limits and shapes as the
// reference (root counts as the first directory; maxDepth 0 lists only the root's
// children; symlinks skipped unless following directory symlinks; non-file/non-dir
// entries left out; per-directory errors reported, not fatal; cycles not re-entered).
import fs from 'node:fs';
import path from 'node:path';
import { invalidRequest } from '../../protocol/errors';
import type { FsWalkOptions, FsWalkResult } from '../../protocol/types';
import { asciiJsonString, JsonText, markVerbatim } from '../../rpc/verbatim';
import { fsError, osMessage } from '../os-errors';
import { pathToUri } from '../paths';

/**
 * The ASCII characters this runtime's pathToFileURL leaves as they are in a path segment,
 * asked of pathToFileURL itself (its set differs between Node versions: `~` is encoded in some),
 * less the two a JSON string would need escaped: a plain name goes into the answer's text as is.
 */
const PLAIN_CHAR = (() => {
  const plain = new Uint8Array(128);
  for (let c = 0x20; c < 0x7f; c++) {
    const ch = String.fromCharCode(c);
    if (ch !== '/' && ch !== '"' && ch !== '\\' && pathToUri(`/a${ch}b`) === `file:///a${ch}b`) plain[c] = 1;
  }
  return plain;
})();

/**
 * The URI segment of one directory entry's name: pathToUri(dir + '/' + name) is the URI of
 * dir + '/' + this. A name of plain characters is its own segment; any other goes through
 * pathToFileURL, whose encoding is per character, so the two ways give the same URI.
 */
function uriSegment(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 128 || PLAIN_CHAR[c] === 0) return pathToUri(`/${name}`).slice('file:///'.length);
  }
  return name;
}

/** `dir` with one trailing separator, for appending a name (path.join's result for a normalized dir and a plain name). */
function withSlash(s: string): string {
  return s.endsWith('/') ? s : `${s}/`;
}

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
 * `asText` (a carrier that serializes results itself, ../connection.ts): the answer's `entries`
 * are built as their JSON text (a JsonText, all ASCII) rather than as objects. For 50 000
 * entries the objects, their URI strings and JSON.stringify's walk over them were more than half
 * of the request's time. In process they are objects, as the caller takes them.
 */
export interface WalkHow {
  canEnter?: (dir: string) => boolean;
  pinned?: boolean;
  asText?: boolean;
}

/** fs/walk of `root` (the shapes and limits in this file's head; `how`: WalkHow). */
export async function walk(root: string, o: FsWalkOptions, { canEnter, pinned = false, asText = false }: WalkHow = {}): Promise<FsWalkResult> {
  checkWalkLimits(o);
  let rootStat: fs.Stats;
  try {
    rootStat = await fs.promises.stat(root);
  } catch (e) {
    throw fsError(e);
  }
  const result: Omit<FsWalkResult, 'entries'> = { errors: [], truncated: false };
  // The entries' JSON text: one flat string per directory listed (the entries of the directory
  // being listed gathered in `listing` and joined once it is done), joined at the end. Appending
  // each entry to one string instead made a rope of 50 000 pieces that lived through the whole
  // walk, and the collector's copying of it cost more than the objects it replaced.
  const texts: string[] = [];
  let listing: string[] = [];
  // Or the entries themselves (not asText).
  const entries: FsWalkResult['entries'] = [];
  let entryCount = 0;
  const answer = (): FsWalkResult =>
    asText ? (markVerbatim({ entries: new JsonText(`[${texts.join(',')}]`), ...result }, 'entries') as unknown as FsWalkResult) : { entries, ...result };
  if (!rootStat.isDirectory()) return answer();

  const visited = new Set<string>();
  const realRoot = await fs.promises.realpath(root).catch(() => root);
  visited.add(realRoot);
  // Each queued directory carries its own URI: an entry's URI is its directory's plus one
  // encoded segment, instead of pathToFileURL (URL parsing) per entry.
  const rootDir = path.normalize(root);
  const queue: { dir: string; uri: string; depth: number }[] = [{ dir: rootDir, uri: pathToUri(rootDir), depth: 0 }];
  let dirsRead = 0;
  let bytes = 64;
  for (let qi = 0; qi < queue.length; qi++) {
    if (dirsRead >= o.maxDirectories) {
      result.truncated = true;
      break;
    }
    dirsRead++;
    const { dir, uri, depth } = queue[qi];
    const isRoot = qi === 0;
    if (canEnter && !pinned && !isRoot && !canEnter(dir)) {
      result.errors.push({ path: pathToUri(dir), message: osMessage(denied()) });
      continue;
    }
    let fh: fs.promises.FileHandle | undefined;
    /** Where the listing is read: the directory's path, or its pinned descriptor. */
    let listed = dir;
    let dirents: fs.Dirent[];
    try {
      if (pinned) {
        const noFollow = !isRoot && !o.followDirectorySymlinks ? fs.constants.O_NOFOLLOW : 0;
        fh = await fs.promises.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | noFollow);
        if (canEnter && !canEnter(fs.readlinkSync(`/proc/self/fd/${fh.fd}`))) throw denied();
        listed = `/proc/self/fd/${fh.fd}`;
      }
      // Dirent types come with the listing: only symlinks need an extra stat.
      dirents = (await fs.promises.readdir(listed, { withFileTypes: true })).sort(byName);
    } catch (e) {
      await fh?.close().catch(() => undefined);
      if (isRoot) throw fsError(e);
      result.errors.push({ path: pathToUri(dir), message: osMessage(e) });
      continue;
    }
    let limited: boolean;
    try {
      limited = await listDirectory(dir, uri, listed, depth, dirents);
    } finally {
      if (listing.length > 0) texts.push(listing.join(','));
      listing = [];
      await fh?.close().catch(() => undefined);
    }
    if (limited) return answer();
  }
  return answer();

  function denied(): Error {
    return Object.assign(new Error('EACCES'), { code: 'EACCES' });
  }

  /** Adds one directory's entries (and queues its subdirectories); true when a limit ended the walk. */
  async function listDirectory(dir: string, dirUri: string, listed: string, depth: number, dirents: fs.Dirent[]): Promise<boolean> {
    const dirPrefix = withSlash(dir);
    const uriPrefix = withSlash(dirUri);
    const jsonPrefix = asText ? asciiJsonString(uriPrefix) : '';
    for (const dirent of dirents) {
      const name = dirent.name;
      let isDir = dirent.isDirectory();
      let isFile = dirent.isFile();
      if (dirent.isSymbolicLink()) {
        if (!o.followDirectorySymlinks) continue;
        try {
          isDir = (await fs.promises.stat(path.join(listed, name))).isDirectory();
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') result.errors.push({ path: uriPrefix + uriSegment(name), message: osMessage(e) });
          continue; // dangling link
        }
        if (!isDir) continue; // only directory symlinks are followed
        isFile = false;
      }
      const kind = isDir ? 'directory' : isFile ? 'file' : undefined;
      if (!kind) continue;
      if (entryCount >= o.maxEntries) {
        result.truncated = true;
        return true;
      }
      const segment = uriSegment(name);
      const uri = uriPrefix + segment;
      bytes += uri.length + 32;
      if (bytes > WALK_MAX_RESPONSE_BYTES) {
        result.truncated = true;
        return true;
      }
      entryCount++;
      if (asText) listing.push(`{"path":"${jsonPrefix}${asciiJsonString(segment)}","kind":"${kind}"}`);
      else entries.push({ path: uri, kind });
      if (kind !== 'directory' || depth >= o.maxDepth) continue;
      if (o.pruneHiddenDirectories && name.startsWith('.')) continue;
      const full = dirPrefix + name;
      if (o.followDirectorySymlinks) {
        // Only followed links can make cycles or a second route to a directory.
        const real = await fs.promises.realpath(full).catch(() => full);
        if (visited.has(real)) continue;
        visited.add(real);
      }
      queue.push({ dir: full, uri, depth: depth + 1 });
    }
    return false;
  }
}

function byName(a: fs.Dirent, b: fs.Dirent): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
