// Pinning the directory a change happens in. A change the gate allows because its path lies
// inside the workspace is checked first and performed after: a concurrent process (an agent's
// sandboxed command may write the workspace) can swap a directory on that path for a symlink
// in between and redirect the change out of the workspace. Pinned, the parent directory is
// opened once, the kernel says where that open directory really is (/proc/self/fd/N), and the
// engine is given `/proc/self/fd/N/<name>`: every later lookup starts from that directory,
// whatever happens to the path. Linux only: elsewhere there is no /proc/self/fd, nothing can be
// pinned, and the pin functions say so ('unsupported', with the reason) so that the gate
// refuses what it would have held instead of checking the path and acting later. Not covered: a
// symlink raced into the last component of a copy destination, and the inside of a tree a
// recursive delete or copy walks.
import { constants, promises as fsp } from 'node:fs';
import path from 'node:path';
import { isInside, isProtectedPath } from './paths';

export interface Pinned {
  /** The path to hand to the engine: /proc/self/fd/N/<name>. */
  path: string;
  /** Where the pinned directory (or file) really is: what /proc/self/fd/N stands for in messages. */
  dir: string;
  close(): Promise<void>;
}

/**
 * `moved`: the path changed since it was checked, or cannot be pinned: refuse the request.
 * `busy`: too many pins are open (each is a file descriptor of the extension host): retry.
 */
export type PinResult = { kind: 'pinned'; pin: Pinned } | { kind: 'unpinned' } | { kind: 'missing' } | { kind: 'busy' } | { kind: 'moved'; real: string } | { kind: 'unsupported'; reason: string };

/**
 * Why paths cannot be pinned on `platform` (the extension host's: process.platform; tests name
 * another), or undefined where they can. Pinning reads where an open descriptor really is
 * through /proc/self/fd, which only Linux has (macOS has F_GETPATH but no path through a
 * descriptor to hand the engine; Windows neither).
 */
export function pinUnsupported(platform: NodeJS.Platform = process.platform): string | undefined {
  if (platform === 'linux') return undefined;
  return `path pinning (holding a path to the folder it was checked in, through /proc/self/fd) is Linux only; this extension host runs on ${platform}`;
}

/** Pins open at once in this process (every endpoint, every connection): a bound on descriptors. */
export const MAX_PINS = 256;
let openPins = 0;

/** Counts a pin for its lifetime: `close` gives the slot back once. */
function counted(close: () => Promise<unknown>): () => Promise<void> {
  openPins++;
  let closed = false;
  return async () => {
    if (closed) return;
    closed = true;
    openPins--;
    await close();
  };
}

export function pinsOpen(): number {
  return openPins;
}

const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY;

/**
 * Opens the parent directory of `p` and checks, on the open directory, that it lies inside one
 * of `roots`: 'moved' when it no longer does (the path changed since it was checked: refuse),
 * 'missing' when the parent does not exist, 'unsupported' when `platform` is not Linux,
 * 'unpinned' for the root itself (no parent). With `createParents` (mkdir -p),
 * missing parents are created one at a time from the deepest existing ancestor, each opened
 * without following a symlink, so a link raced into the path is refused, not followed.
 */
export async function pinParent(p: string, roots: readonly string[], protectedRoots: readonly string[], createParents = false, exactRoots = false, platform: NodeJS.Platform = process.platform): Promise<PinResult> {
  const unsupported = pinUnsupported(platform);
  if (unsupported) return { kind: 'unsupported', reason: unsupported };
  if (openPins >= MAX_PINS) return { kind: 'busy' };
  const name = path.basename(p);
  const missing: string[] = [];
  let dir = path.dirname(p);
  if (name === '' || dir === p) return { kind: 'unpinned' };
  let fh: fsp.FileHandle;
  for (;;) {
    try {
      fh = await fsp.open(dir, O_DIR);
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const up = path.dirname(dir);
      // Not a directory that can be opened (a file, no permission...): refused rather than
      // acted on unpinned (whoever made it so could swap it for a symlink next).
      if (code !== 'ENOENT' || up === dir) return { kind: 'moved', real: `${dir} (${code ?? 'error'})` };
      if (!createParents) return { kind: 'missing' };
      missing.unshift(path.basename(dir));
      dir = up;
    }
  }
  let handle = fh;
  const closeAll = counted(() => handle.close().catch(() => undefined));
  try {
    // `exactRoots`: a root may be the target itself (a file or folder granted alone), whose
    // parent is not allowed; the target is then checked by name in the pinned directory.
    const check = async (): Promise<string | undefined> => {
      const real = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
      return roots.some((r) => isInside(real, r) || (exactRoots && path.join(real, name) === r)) ? real : undefined;
    };
    let real = await check();
    for (const part of missing) {
      if (real === undefined) break;
      await fsp.mkdir(`/proc/self/fd/${handle.fd}/${part}`).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
      // O_NOFOLLOW: a symlink raced in place of the directory just made fails here (ELOOP).
      const next = await fsp.open(`/proc/self/fd/${handle.fd}/${part}`, O_DIR | constants.O_NOFOLLOW);
      await handle.close().catch(() => undefined);
      handle = next;
      real = await check();
    }
    const target = real === undefined ? undefined : path.join(real, name);
    if (target === undefined || isProtectedPath(target, protectedRoots)) {
      const where = await fsp.readlink(`/proc/self/fd/${handle.fd}`).catch(() => dir);
      await closeAll();
      return { kind: 'moved', real: path.join(where, name) };
    }
    return { kind: 'pinned', pin: { path: `/proc/self/fd/${handle.fd}/${name}`, dir: real as string, close: closeAll } };
  } catch {
    // A symlink in place of a directory being created (ELOOP), the directory renamed away
    // (ENOENT)...: the path changed under us. Never fall back to the unpinned path here.
    await closeAll();
    return { kind: 'moved', real: path.join(dir, ...missing, name) };
  }
}

/**
 * Opens `p` itself (following links, as a read would) and checks where the open file really
 * is: inside one of `roots` → the engine reads `/proc/self/fd/N`, the very file checked,
 * whatever happens to the path meanwhile. 'moved' when it lies outside now; an open error is
 * returned for the caller to answer as the engine would; 'unsupported' when `platform` is not Linux.
 */
export async function pinTarget(p: string, roots: readonly string[], directory: boolean, platform: NodeJS.Platform = process.platform): Promise<PinResult | { kind: 'error'; error: unknown }> {
  const unsupported = pinUnsupported(platform);
  if (unsupported) return { kind: 'unsupported', reason: unsupported };
  if (openPins >= MAX_PINS) return { kind: 'busy' };
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(p, directory ? O_DIR : constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    return { kind: 'error', error: e };
  }
  const handle = fh;
  const close = counted(() => handle.close().catch(() => undefined));
  try {
    const real = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
    if (!roots.some((r) => isInside(real, r))) {
      await close();
      return { kind: 'moved', real };
    }
    return { kind: 'pinned', pin: { path: `/proc/self/fd/${handle.fd}`, dir: real, close } };
  } catch {
    await close();
    return { kind: 'moved', real: p };
  }
}

/** An engine error message with the pinned /proc paths written back as the real directories. */
export function unpinMessage(message: string, pins: readonly Pinned[]): string {
  let m = message;
  for (const pin of pins) {
    // /proc/self/fd/N is the pinned directory (or file) itself.
    m = m.split(pin.path.split('/').slice(0, 5).join('/')).join(pin.dir);
  }
  return m;
}
