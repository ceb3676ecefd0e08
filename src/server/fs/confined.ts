// The fs/* methods under a managed sandbox, free of the check-then-act window. The sandbox
// check on the path as asked (../sandbox/fs-guard.ts checkFsAccess) happens before, for the
// reference's errors; but a process writing inside a writable root can swap a checked
// directory for a symlink right after it. So each operation here first opens what it acts on
// and judges again where the kernel says the open descriptor really is (/proc/self/fd/N),
// then uses only that descriptor:
// - reads (readFile, open, readDirectory, canonicalize) open the file or directory itself;
// - changes (remove, rename, createDirectory, copy's destination) and getMetadata open the
//   parent directory and act on `/proc/self/fd/N/<name>` — every lookup starts from that very
//   directory, and the last component is not followed (unlink, rmdir, rename, mkdir, lstat);
// - trees (recursive remove and copy) are walked by descriptor, each directory opened with
//   O_NOFOLLOW from its pinned parent, so a symlink raced into the tree is removed or copied
//   as a link, never followed (fs/walk, in ./walk.ts, lists each directory from its
//   descriptor the same way).
// Linux only (/proc); elsewhere the callers keep the check-then-act implementations.
import fs, { constants as C } from 'node:fs';
import path from 'node:path';
import { invalidRequest } from '../../protocol/errors';
import { markVerbatim, type Base64Text } from '../../rpc/verbatim';
import { readBase64 } from './base64-file';
import type { FsDirectoryEntry, FsMetadata } from '../../protocol/types';
import type { Confinement } from '../sandbox/fs-guard';
import { fsError } from '../os-errors';
import { pathToUri } from '../paths';
import { MAX_READ_FILE_BYTES, metadataOf, tooLargeToRead } from './fs-methods';

const fsp = fs.promises;
type FileHandle = fs.promises.FileHandle;

/** Can descriptors be pinned here? */
export const CAN_PIN = process.platform === 'linux';

/** O_PATH (Linux; same value on x86_64 and aarch64): a descriptor naming a file without opening it for I/O. */
export const O_PATH = 0o10000000;
const O_DIR = C.O_RDONLY | C.O_DIRECTORY;
/**
 * A directory held only to look names up in (parents, mkdir -p steps): O_PATH needs search
 * permission alone, as the path lookup it replaces did (O_RDONLY would also need read).
 */
const O_LOOKUP = O_PATH | C.O_DIRECTORY;

/** The path standing for an open descriptor (and, with `name`, an entry of that open directory). */
export function at(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

/** Where the open descriptor really is (throws when /proc cannot say: refused rather than unchecked). */
export function realOf(fd: number): string {
  return fs.readlinkSync(at(fd));
}

async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw fsError(e);
  }
}

async function closing<T>(fh: FileHandle, fn: (fh: FileHandle) => Promise<T>): Promise<T> {
  try {
    return await fn(fh);
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** The parent directory of `p`, opened (links in it followed, as the kernel would for `p`), and the last component. */
interface Parent {
  fh: FileHandle;
  /** Where the open parent really is. */
  real: string;
  name: string;
  /** `/proc/self/fd/N/<name>`: `p` as seen from the pinned parent. */
  path: string;
  /** The path the sandbox judges: real parent + name. */
  target: string;
}

async function openParent(p: string): Promise<Parent> {
  const name = path.basename(p);
  // "/" has no parent: judged and used as itself (nothing can be swapped above it).
  const fh = await fsp.open(name === '' ? '/' : path.dirname(p), O_LOOKUP);
  try {
    const real = realOf(fh.fd);
    return { fh, real, name, path: name === '' ? '/' : at(fh.fd, name), target: name === '' ? real : path.join(real, name) };
  } catch (e) {
    await fh.close().catch(() => undefined);
    throw e;
  }
}

async function withParent<T>(p: string, fn: (parent: Parent) => Promise<T>): Promise<T> {
  const parent = await openParent(p);
  try {
    return await fn(parent);
  } finally {
    await parent.fh.close().catch(() => undefined);
  }
}

export function readFile(p: string, noFollow: boolean, conf: Confinement, limit = MAX_READ_FILE_BYTES): Promise<{ dataBase64: string | Base64Text }> {
  return guard(async () => {
    // O_NONBLOCK: a FIFO would otherwise wait for a writer (refused below as not a file).
    const fh = await fsp.open(p, C.O_RDONLY | C.O_NONBLOCK | (noFollow ? C.O_NOFOLLOW : 0));
    return closing(fh, async () => {
      conf.check(realOf(fh.fd), 'read');
      const st = await fh.stat();
      if (!st.isFile()) throw invalidRequest(`path \`${p}\` is not a file`);
      if (st.size > limit) throw tooLargeToRead(limit);
      return markVerbatim({ dataBase64: await readBase64(fh, st.size, limit) }, 'dataBase64');
    });
  });
}

export function readDirectory(p: string, conf: Confinement): Promise<{ entries: FsDirectoryEntry[] }> {
  return guard(async () => {
    const fh = await fsp.open(p, O_DIR);
    return closing(fh, async () => {
      conf.check(realOf(fh.fd), 'read');
      const names = (await fsp.readdir(at(fh.fd))).sort();
      const entries: FsDirectoryEntry[] = [];
      for (const fileName of names) {
        try {
          // Follows symlinks like the reference (only the kind is reported); dangling links are left out.
          const st = await fsp.stat(at(fh.fd, fileName));
          entries.push({ fileName, isDirectory: st.isDirectory(), isFile: st.isFile() });
        } catch {
          // vanished or dangling: skip
        }
      }
      return { entries };
    });
  });
}

export function getMetadata(p: string, conf: Confinement): Promise<FsMetadata> {
  return guard(async () =>
    withParent(p, async (parent) => {
      conf.check(parent.target, 'read');
      const lst = fs.lstatSync(parent.path);
      let st = lst;
      if (lst.isSymbolicLink()) {
        // What the link leads to is reported too: judged where it really is.
        const fd = fs.openSync(parent.path, O_PATH);
        try {
          conf.check(realOf(fd), 'read');
          st = fs.fstatSync(fd);
        } finally {
          fs.closeSync(fd);
        }
      }
      return metadataOf(lst, st);
    }),
  );
}

export function canonicalize(p: string, conf: Confinement): Promise<{ path: string }> {
  return guard(async () => {
    const fd = fs.openSync(p, O_PATH);
    try {
      const real = realOf(fd);
      conf.check(real, 'read');
      return { path: pathToUri(real) };
    } finally {
      fs.closeSync(fd);
    }
  });
}

export function createDirectory(p: string, recursive: boolean, conf: Confinement): Promise<Record<string, never>> {
  return guard(async () => {
    if (!recursive) {
      await withParent(p, async (parent) => {
        conf.check(parent.target, 'write');
        await fsp.mkdir(parent.path);
      });
      return {};
    }
    // mkdir -p one component at a time from "/": existing directories are entered (links
    // followed, as mkdir -p does), each missing one is judged in its pinned parent, made there
    // and opened without following a link (one raced into its place fails with ELOOP).
    const parts = (path.isAbsolute(p) ? p : path.resolve(p)).split('/').filter((x) => x !== '' && x !== '.');
    let cur = await fsp.open('/', O_LOOKUP);
    try {
      for (let i = 0; i < parts.length; i++) {
        const entry = at(cur.fd, parts[i]);
        let next: FileHandle;
        try {
          next = await fsp.open(entry, O_LOOKUP);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          // An existing non-directory: EEXIST as the last component (mkdir -p's answer), else ENOTDIR.
          if (code === 'ENOTDIR' && i === parts.length - 1) throw Object.assign(new Error('exists'), { code: 'EEXIST' });
          if (code !== 'ENOENT' || parts[i] === '..') throw e;
          conf.check(path.join(realOf(cur.fd), parts[i]), 'write');
          await fsp.mkdir(entry).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== 'EEXIST') throw err;
          });
          next = await fsp.open(entry, O_LOOKUP | C.O_NOFOLLOW);
        }
        await cur.close().catch(() => undefined);
        cur = next;
      }
    } finally {
      await cur.close().catch(() => undefined);
    }
    return {};
  });
}

export function remove(p: string, recursive: boolean, force: boolean, conf: Confinement): Promise<Record<string, never>> {
  return guard(async () => {
    let parent: Parent;
    try {
      parent = await openParent(p);
    } catch (e) {
      if (force && (e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw e;
    }
    try {
      conf.check(parent.target, 'write', recursive);
      let st: fs.Stats;
      try {
        st = await fsp.lstat(parent.path);
      } catch (e) {
        if (force && (e as NodeJS.ErrnoException).code === 'ENOENT') return {};
        throw e;
      }
      if (!st.isDirectory()) await fsp.unlink(parent.path);
      else if (recursive) await removeTree(parent.fh.fd, parent.name, force);
      else await fsp.rmdir(parent.path);
      return {};
    } finally {
      await parent.fh.close().catch(() => undefined);
    }
  });
}

/** rm -r of `name` in the open directory `dirFd`, by descriptor: a link raced in is removed, never followed. */
async function removeTree(dirFd: number, name: string, force: boolean): Promise<void> {
  const ignoreMissing = (e: NodeJS.ErrnoException) => {
    if (!(force && e.code === 'ENOENT')) throw e;
  };
  let fh: FileHandle;
  try {
    fh = await fsp.open(at(dirFd, name), O_DIR | C.O_NOFOLLOW);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // Swapped for a link or a file since it was seen as a directory: remove that entry itself.
    if (code === 'ELOOP' || code === 'ENOTDIR') return fsp.unlink(at(dirFd, name)).catch(ignoreMissing);
    return ignoreMissing(e as NodeJS.ErrnoException);
  }
  await closing(fh, async () => {
    for (const entry of await fsp.readdir(at(fh.fd))) {
      let st: fs.Stats;
      try {
        st = await fsp.lstat(at(fh.fd, entry));
      } catch (e) {
        ignoreMissing(e as NodeJS.ErrnoException);
        continue;
      }
      if (st.isDirectory()) await removeTree(fh.fd, entry, force);
      else await fsp.unlink(at(fh.fd, entry)).catch(ignoreMissing);
    }
  });
  await fsp.rmdir(at(dirFd, name)).catch(ignoreMissing);
}

/**
 * Renames between two pinned parents; `rename` is the unconfined implementation (link+unlink
 * for overwrite=false), given the pinned paths; `dst` names the destination in its messages.
 */
export function rename(
  src: string,
  dst: string,
  conf: Confinement,
  rename: (src: string, dst: string, display: string) => Promise<Record<string, never>>,
): Promise<Record<string, never>> {
  return guard(async () =>
    withParent(src, (from) =>
      withParent(dst, async (to) => {
        // A tree moves with its inside: every rule below either path must allow the write.
        conf.check(from.target, 'write', true);
        conf.check(to.target, 'write', true);
        return rename(from.path, to.path, dst);
      }),
    ),
  );
}

export function copy(src: string, dst: string, recursive: boolean, conf: Confinement): Promise<Record<string, never>> {
  return guard(async () =>
    withParent(src, (from) =>
      withParent(dst, async (to) => {
        conf.check(from.target, 'read', recursive);
        conf.check(to.target, 'write', recursive);
        const st = await fsp.lstat(from.path);
        if (st.isSymbolicLink()) {
          // Like the reference: the link itself is copied, not what it points to.
          await fsp.symlink(await fsp.readlink(from.path), to.path);
        } else if (st.isDirectory()) {
          if (!recursive) throw invalidRequest('fs/copy requires recursive: true when sourcePath is a directory');
          const dir = await fsp.open(from.path, O_DIR | C.O_NOFOLLOW);
          await closing(dir, async () => {
            const rel = path.relative(realOf(dir.fd), to.target);
            if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) {
              throw invalidRequest('fs/copy cannot copy a directory to itself or one of its descendants');
            }
            await copyTree(dir, to.fh.fd, to.name, conf);
          });
        } else if (st.isFile()) {
          await copyFileInto(from.path, to.fh.fd, to.name, conf);
        } else {
          throw invalidRequest('fs/copy only supports regular files, directories, and symlinks');
        }
        return {};
      }),
    ),
  );
}

const COPY_CHUNK = 1024 * 1024;

async function copyBytes(from: FileHandle, to: FileHandle): Promise<void> {
  const buf = Buffer.allocUnsafe(COPY_CHUNK);
  for (let pos = 0; ; ) {
    const { bytesRead } = await from.read(buf, 0, buf.length, pos);
    if (bytesRead === 0) return;
    let off = 0;
    while (off < bytesRead) off += (await to.write(buf, off, bytesRead - off)).bytesWritten;
    pos += bytesRead;
  }
}

/**
 * A file copy to `name` in the open directory `dirFd`. As fs.copyFile, a final link at the
 * destination is written through — judged where the opened file really is before a byte
 * changes (a file this open created and then refused is removed from the pinned directory).
 */
async function copyFileInto(srcPath: string, dirFd: number, name: string, conf: Confinement): Promise<void> {
  const src = await fsp.open(srcPath, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  await closing(src, async () => {
    const st = await src.stat();
    if (!st.isFile()) throw invalidRequest('fs/copy only supports regular files, directories, and symlinks');
    const dstPath = at(dirFd, name);
    let created = true;
    let dst: FileHandle;
    try {
      dst = await fsp.open(dstPath, C.O_WRONLY | C.O_CREAT | C.O_EXCL, st.mode & 0o7777);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      created = false;
      dst = await fsp.open(dstPath, C.O_WRONLY | C.O_CREAT, st.mode & 0o7777);
    }
    await closing(dst, async () => {
      try {
        conf.check(realOf(dst.fd), 'write');
      } catch (e) {
        // Created by O_EXCL: no link was followed, so the new file is `name` in the pinned directory.
        if (created) await fsp.unlink(dstPath).catch(() => undefined);
        throw e;
      }
      await dst.chmod(st.mode & 0o7777);
      await dst.truncate(0);
      await copyBytes(src, dst);
    });
  });
}

/**
 * cp -r of the open directory `src` to `name` in the open directory `dirFd` (merged into an
 * existing directory, files overwritten, as fs.cp with force). Every directory on both sides
 * is opened with O_NOFOLLOW from its pinned parent; links are copied as links; an existing
 * link in the destination tree is replaced, never written through.
 */
async function copyTree(src: FileHandle, dirFd: number, name: string, conf: Confinement): Promise<void> {
  const mode = (await src.stat()).mode & 0o7777;
  await fsp.mkdir(at(dirFd, name), mode).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'EEXIST') throw e;
  });
  const dst = await fsp.open(at(dirFd, name), O_DIR | C.O_NOFOLLOW);
  await closing(dst, async () => {
    // The tree's top is judged where it really is; everything below is inside it.
    conf.check(realOf(dst.fd), 'write', true);
    for (const entry of await fsp.readdir(at(src.fd))) {
      const from = at(src.fd, entry);
      const to = at(dst.fd, entry);
      const st = await fsp.lstat(from);
      if (st.isDirectory()) {
        const sub = await fsp.open(from, O_DIR | C.O_NOFOLLOW);
        await closing(sub, () => copyTree(sub, dst.fd, entry, conf));
      } else if (st.isSymbolicLink()) {
        const target = await fsp.readlink(from);
        await fsp.symlink(target, to).catch(async (e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
          await fsp.unlink(to);
          await fsp.symlink(target, to);
        });
      } else if (st.isFile()) {
        await replaceLink(to);
        await copyFileInto(from, dst.fd, entry, conf);
      } else {
        throw invalidRequest('fs/copy only supports regular files, directories, and symlinks');
      }
    }
  });
}

/** Removes `p` if it is a symlink (a file copied over it must not be written through it). */
async function replaceLink(p: string): Promise<void> {
  try {
    if ((await fsp.lstat(p)).isSymbolicLink()) await fsp.unlink(p);
  } catch {
    // missing: nothing to replace
  }
}
