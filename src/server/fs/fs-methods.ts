// The one-shot filesystem methods (fs/readFile … fs/rename). Paths arrive already decoded
// to absolute local paths; results carry `file://` URIs. OS errors map via fsError().
import fs from 'node:fs';
import path from 'node:path';
import { invalidRequest } from '../../protocol/errors';
import { markVerbatim, type Base64Text } from '../../rpc/verbatim';
import { readBase64 } from './base64-file';
import type { FsDirectoryEntry, FsMetadata } from '../../protocol/types';
import { fsError } from '../os-errors';
import { pathToUri } from '../paths';

async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw fsError(e);
  }
}

/**
 * fs/readFile answers in one JSON message (base64), so it is bounded (reference: 512 MiB,
 * more than a Node string can carry once base64-encoded); larger files are read with
 * fs/open + fs/readBlock.
 */
export const MAX_READ_FILE_BYTES = 128 * 1024 * 1024;

/** The refusal of a file over `limit`, also when it grew past it while being read. */
export const tooLargeToRead = (limit: number) => invalidRequest(`file is too large to read: limit is ${limit} bytes`);

export function readFile(p: string, limit = MAX_READ_FILE_BYTES): Promise<{ dataBase64: string | Base64Text }> {
  return guard(async () => {
    const st = await fs.promises.stat(p);
    if (!st.isFile()) throw invalidRequest(`path \`${p}\` is not a file`);
    if (st.size > limit) throw tooLargeToRead(limit);
    // O_NONBLOCK: a file swapped for a FIFO after the stat does not wait for a writer.
    const fh = await fs.promises.open(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    try {
      const now = await fh.stat();
      if (!now.isFile()) throw invalidRequest(`path \`${p}\` is not a file`);
      if (now.size > limit) throw tooLargeToRead(limit);
      return markVerbatim({ dataBase64: await readBase64(fh, now.size, limit) }, 'dataBase64');
    } finally {
      await fh.close().catch(() => undefined);
    }
  });
}

/** `noFollow`: a final symlink is not written through (O_NOFOLLOW → ELOOP, as the reference). */
export function writeFile(p: string, data: Buffer, noFollow = false): Promise<Record<string, never>> {
  return guard(async () => {
    const c = fs.constants;
    await fs.promises.writeFile(p, data, noFollow ? { flag: c.O_WRONLY | c.O_CREAT | c.O_TRUNC | c.O_NOFOLLOW } : undefined);
    return {};
  });
}

/**
 * fs/writeFile under a managed sandbox: opened without truncating, then `verify` is given the
 * path the kernel really opened (/proc/self/fd on Linux) before a byte is changed. This closes
 * the check-then-act window for the common write: a directory swapped for a symlink after the
 * sandbox check is caught here, before any byte is written (a file this open created is
 * removed; through a dangling link raced in, an empty file may remain).
 */
export function writeFileVerified(p: string, data: Buffer, noFollow: boolean, verify: (real: string) => void): Promise<Record<string, never>> {
  return guard(async () => {
    const c = fs.constants;
    const flags = c.O_WRONLY | (noFollow ? c.O_NOFOLLOW : 0);
    // Whether *this* open created the file decides whether a refused file may be removed:
    // O_EXCL tells it race-free (an earlier existsSync could see another directory).
    let created = true;
    let fh: fs.promises.FileHandle;
    try {
      fh = await fs.promises.open(p, flags | c.O_CREAT | c.O_EXCL, 0o666);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      created = false; // exists — or a dangling link, whose target O_CREAT makes (not removed on refusal)
      fh = await fs.promises.open(p, flags | c.O_CREAT, 0o666);
    }
    try {
      let real: string | undefined;
      try {
        real = fs.readlinkSync(`/proc/self/fd/${fh.fd}`);
      } catch {
        real = undefined; // no /proc (not Linux): the pre-check stands alone
      }
      if (real !== undefined) {
        try {
          verify(real);
        } catch (e) {
          // Remove the file this open created — but only if `real` still names that very file:
          // the path is resolved again by unlink, and a directory swapped for a symlink in
          // between would make it delete an outside file of the same name (seen in the race test).
          if (created) await removeIfSame(fh, real);
          throw e;
        }
      }
      await fh.truncate(0);
      await fh.writeFile(data);
    } finally {
      await fh.close();
    }
    return {};
  });
}

/**
 * Unlinks `real` if it still names the file `fh` holds. Its directory is opened and checked
 * first, and the name is looked up and unlinked in that open directory (/proc/self/fd/N/name),
 * so no path resolution happens between the comparison and the unlink; the directory is
 * outside every writable root (that is why the write was refused), so a sandboxed process
 * cannot replace the name in it either.
 */
async function removeIfSame(fh: fs.promises.FileHandle, real: string): Promise<void> {
  let dir: number | undefined;
  try {
    // O_PATH (0o10000000, Linux): held to look the name up in; needs no read permission.
    dir = fs.openSync(path.dirname(real), 0o10000000 | fs.constants.O_DIRECTORY);
    if (fs.readlinkSync(`/proc/self/fd/${dir}`) !== path.dirname(real)) return; // moved meanwhile: leave it
    const entry = `/proc/self/fd/${dir}/${path.basename(real)}`;
    const opened = await fh.stat();
    const named = fs.lstatSync(entry);
    if (named.isFile() && named.ino === opened.ino && named.dev === opened.dev) fs.unlinkSync(entry);
  } catch {
    // gone or unreadable: nothing to remove
  } finally {
    if (dir !== undefined) fs.closeSync(dir);
  }
}

export function createDirectory(p: string, recursive: boolean): Promise<Record<string, never>> {
  return guard(async () => {
    if (recursive) {
      await fs.promises.mkdir(p, { recursive: true });
      // mkdir -p succeeds silently on an existing *file* in some Node versions: be strict.
      if (!(await fs.promises.stat(p)).isDirectory()) {
        throw Object.assign(new Error('exists'), { code: 'EEXIST' });
      }
    } else {
      await fs.promises.mkdir(p);
    }
    return {};
  });
}

/** The wire metadata of an entry: `lst` describes the link itself, `st` what it points to (the same for a non-link). */
export function metadataOf(lst: fs.Stats, st: fs.Stats): FsMetadata {
  return {
    isDirectory: st.isDirectory(),
    isFile: st.isFile(),
    isSymlink: lst.isSymbolicLink(),
    size: st.size,
    createdAtMs: Math.floor(st.birthtimeMs || 0),
    modifiedAtMs: Math.floor(st.mtimeMs),
  };
}

export function getMetadata(p: string): Promise<FsMetadata> {
  return guard(async () => {
    // Sync on purpose: a metadata lookup costs ~2 µs here, a thread-pool round trip ~19 µs plus
    // two loop wake-ups, and fs/getMetadata is the hottest request a client sends.
    const lst = fs.lstatSync(p);
    return metadataOf(lst, lst.isSymbolicLink() ? fs.statSync(p) : lst);
  });
}

export function canonicalize(p: string): Promise<{ path: string }> {
  return guard(async () => ({ path: pathToUri(await fs.promises.realpath(p)) }));
}

export function readDirectory(p: string): Promise<{ entries: FsDirectoryEntry[] }> {
  return guard(async () => {
    const names = (await fs.promises.readdir(p)).sort();
    const entries: FsDirectoryEntry[] = [];
    for (const fileName of names) {
      try {
        // Follows symlinks like the reference; dangling links are left out.
        const st = await fs.promises.stat(path.join(p, fileName));
        entries.push({ fileName, isDirectory: st.isDirectory(), isFile: st.isFile() });
      } catch {
        // vanished or dangling: skip
      }
    }
    return { entries };
  });
}

export function remove(p: string, recursive: boolean, force: boolean): Promise<Record<string, never>> {
  return guard(async () => {
    let st: fs.Stats;
    try {
      st = await fs.promises.lstat(p);
    } catch (e) {
      if (force && (e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw e;
    }
    if (st.isDirectory()) {
      if (recursive) await fs.promises.rm(p, { recursive: true, force });
      else await fs.promises.rmdir(p);
    } else {
      await fs.promises.unlink(p);
    }
    return {};
  });
}

export function copy(src: string, dst: string, recursive: boolean): Promise<Record<string, never>> {
  return guard(async () => {
    const st = await fs.promises.lstat(src);
    if (st.isSymbolicLink()) {
      // Like the reference: the link itself is copied, not what it points to.
      await fs.promises.symlink(await fs.promises.readlink(src), dst);
    } else if (st.isDirectory()) {
      if (!recursive) throw invalidRequest('fs/copy requires recursive: true when sourcePath is a directory');
      const rel = path.relative(await fs.promises.realpath(src), await realpathOfNew(dst));
      if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) {
        throw invalidRequest('fs/copy cannot copy a directory to itself or one of its descendants');
      }
      await fs.promises.cp(src, dst, { recursive: true, force: true, errorOnExist: false, verbatimSymlinks: true });
    } else if (st.isFile()) {
      await fs.promises.copyFile(src, dst);
    } else {
      throw invalidRequest('fs/copy only supports regular files, directories, and symlinks');
    }
    return {};
  });
}

/** realpath of a path that may not exist yet: its nearest existing ancestor, resolved, plus the rest. */
async function realpathOfNew(p: string): Promise<string> {
  let existing = p;
  const rest: string[] = [];
  for (let i = 0; i < 4096; i++) {
    try {
      return path.join(await fs.promises.realpath(existing), ...rest);
    } catch {
      const up = path.dirname(existing);
      if (up === existing) return p;
      rest.unshift(path.basename(existing));
      existing = up;
    }
  }
  return p;
}

/**
 * [extension] Atomic rename. With overwrite=false the destination must not exist: for files
 * this is enforced atomically with link()+unlink() (link fails with EEXIST); directories
 * fall back to check-then-rename.
 */
export function rename(src: string, dst: string, overwrite: boolean, display = dst): Promise<Record<string, never>> {
  return guard(async () => {
    if (overwrite) {
      await fs.promises.rename(src, dst);
      return {};
    }
    const exists = () => invalidRequest(`destination \`${display}\` already exists`);
    const st = await fs.promises.lstat(src);
    if (!st.isDirectory()) {
      try {
        await fs.promises.link(src, dst);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') throw exists();
        if (code !== 'EPERM' && code !== 'EXDEV' && code !== 'ENOTSUP' && code !== 'EMLINK') throw e;
        // filesystem without hard links: fall through to check-then-rename
        if (await pathExists(dst)) throw exists();
        await fs.promises.rename(src, dst);
        return {};
      }
      await fs.promises.unlink(src);
      return {};
    }
    if (await pathExists(dst)) throw exists();
    await fs.promises.rename(src, dst);
    return {};
  });
}

async function pathExists(p: string): Promise<boolean> {
  try {
    await fs.promises.lstat(p);
    return true;
  } catch {
    return false;
  }
}
