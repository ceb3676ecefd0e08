// Go to File on an environment: the file names under a folder, listed with fs/walk one
// directory at a time (maxDepth 0) so excluded folders (.git, node_modules, …) are never
// entered — a whole-tree fs/walk would descend into them and spend its entry limit there.
// Directories are read a few at a time; names are handed out in batches as they arrive (the
// quick pick fills while the walk goes on) and the walk stops at `maxFiles` or on abort.
import * as path from 'node:path';
import type { ExecClient } from '../../client/api';
import { DEFAULT_EXCLUDED_NAMES } from './argv';

export const DEFAULT_MAX_FILES = 20_000;
/**
 * Directories read at most: a folder of empty directories (cheap to make by the thousand) holds
 * no file, so maxFiles alone would let the walk go on for as long as there are directories.
 */
export const DEFAULT_MAX_DIRECTORIES = 20_000;
/** The server's per-walk entry maximum (src/server/fs/walk.ts, same as the reference). */
const WALK_MAX_ENTRIES = 50_000;

export interface ListFilesOptions {
  /** Names of folders never entered and files not listed (default DEFAULT_EXCLUDED_NAMES). */
  excludeNames?: readonly string[];
  maxFiles?: number;
  /** Directories read at most (then `truncated`). */
  maxDirectories?: number;
  /** Directories read at once (requests in flight). */
  concurrency?: number;
  signal?: AbortSignal;
  /** New file paths (relative to the root), in the order found. */
  onBatch?(files: string[]): void;
}

export interface ListFilesOutcome {
  /** Relative to the root, '/'-separated. */
  files: string[];
  /** More files exist than were listed (maxFiles reached, or a directory too large to list). */
  truncated: boolean;
  cancelled: boolean;
  /** Directories that could not be read (permission denied, vanished). */
  unreadable: number;
  directories: number;
}

export async function listFiles(client: ExecClient, root: string, opts: ListFilesOptions = {}): Promise<ListFilesOutcome> {
  const exclude = new Set(opts.excludeNames ?? DEFAULT_EXCLUDED_NAMES);
  const maxFiles = Math.max(1, opts.maxFiles ?? DEFAULT_MAX_FILES);
  const maxDirectories = Math.max(1, opts.maxDirectories ?? DEFAULT_MAX_DIRECTORIES);
  const concurrency = Math.max(1, opts.concurrency ?? 8);
  let started = 0;
  let moreDirectories = false;
  const out: ListFilesOutcome = { files: [], truncated: false, cancelled: false, unreadable: 0, directories: 0 };
  const queue: string[] = [root];
  let active = 0;
  let firstError: unknown;

  const done = () => out.cancelled || out.truncated || opts.signal?.aborted === true;

  const readOne = async (dir: string): Promise<void> => {
    let r;
    try {
      r = await client.fs.walk(dir, { maxDepth: 0, maxDirectories: 1, maxEntries: WALK_MAX_ENTRIES, followDirectorySymlinks: false });
    } catch (e) {
      if (dir === root) firstError = e; // the root itself: the caller's error
      else out.unreadable++;
      return;
    }
    out.directories++;
    if (r.truncated) out.truncated = true;
    out.unreadable += r.errors.length;
    const batch: string[] = [];
    for (const e of r.entries) {
      const rel = path.posix.relative(root, e.path);
      if (e.kind === 'directory') {
        // Never queued past the bound: a directory of 50 000 subdirectories costs no more than that.
        if (exclude.has(path.posix.basename(e.path))) continue;
        if (started + queue.length < maxDirectories) queue.push(e.path);
        else moreDirectories = true;
      } else if (e.kind === 'file' && !exclude.has(path.posix.basename(e.path))) {
        if (done()) break;
        if (out.files.length >= maxFiles) {
          out.truncated = true;
          break;
        }
        out.files.push(rel);
        batch.push(rel);
      }
    }
    if (batch.length && !opts.signal?.aborted) opts.onBatch?.(batch);
  };

  await new Promise<void>((resolve) => {
    const pump = () => {
      if (opts.signal?.aborted) out.cancelled = true;
      while (!done() && firstError === undefined && active < concurrency && queue.length > 0) {
        if (started >= maxDirectories) {
          out.truncated = true;
          break;
        }
        started++;
        const dir = queue.shift()!;
        active++;
        void readOne(dir).finally(() => {
          active--;
          pump();
        });
      }
      if (active === 0 && (done() || firstError !== undefined || queue.length === 0)) resolve();
    };
    opts.signal?.addEventListener('abort', pump, { once: true });
    pump();
  });
  if (firstError !== undefined) throw firstError;
  if (moreDirectories && !out.cancelled) out.truncated = true;
  return out;
}
