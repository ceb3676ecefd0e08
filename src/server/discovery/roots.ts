// capabilityRoots/discoverV1: what a capability root holds, materialized verbatim for the client
// (which parses it itself): the root's plugin manifest with its `.mcp.json` and `.app.json`,
// every `SKILL.md` below it with the sibling `agents/openai.yaml`, and every plugin manifest
// found on the way (namespaceManifests). Shapes, limits, order and texts are the reference's
// (codex 0.169 and 0.171, measured: test/interop/capability-roots.test.ts):
// - directories are walked to depth 6 below the root, names in byte order, symlinked
//   directories followed but each real directory entered once; a symlinked file is not read;
// - a file over 1 MiB, and any file once the root's bundle passed 16 MiB, is left out with a
//   warning; a root's own failure is its `error`, never the call's.
//
// capabilityDiscoverySandbox: a root with a managed `sandbox` is read as a process under that
// sandbox would see it. The reference runs discovery inside its sandbox helper; we judge each
// directory and file by where the kernel says the opened descriptor really is
// (/proc/self/fd/N), after opening and before reading, so a symlink raced in between judge and
// read cannot lead outside (the same rule as ../fs/confined.ts). What the sandbox does not
// mount at all reads as ENOENT (the reference's bwrap has no such path), what it marks `none`
// as EACCES.
import fs, { constants as C } from 'node:fs';
import path from 'node:path';
import type { CapabilityFile, CapabilityRootResult } from '../../protocol/types';
import { CAN_PIN, at, realOf } from '../fs/confined';
import { osMessage } from '../os-errors';
import { isInside, pathToUri } from '../paths';
import { accessFor, type SandboxProfile } from '../sandbox/profile';
import { resolveProfile } from '../sandbox/resolve';

const fsp = fs.promises;
type FileHandle = fs.promises.FileHandle;

export const MAX_CAPABILITY_ROOTS = 128;
export const MAX_CAPABILITY_FILE_BYTES = 1024 * 1024;
export const MAX_CAPABILITY_BUNDLE_BYTES = 16 * 1024 * 1024;
export const MAX_CAPABILITY_DEPTH = 6;
/** Directories entered per root, the root included (the reference's traversal limit, measured: 2000 pass, 2001 warn). */
export const MAX_CAPABILITY_DIRS = 2000;
const PREFETCH = 16;
/** In the reference's order of preference: the first that is a regular file is the directory's manifest. */
const MANIFESTS = ['.codex-plugin/plugin.json', '.claude-plugin/plugin.json', '.cursor-plugin/plugin.json'];

export interface CapabilityRootQuery {
  id: string;
  /** Absolute local path (normalized; not symlink-resolved). */
  path: string;
  sandbox: SandboxProfile;
}

/** What a sandbox lets a reader see at a real (link-free) path. */
type Visibility = 'read' | 'none' | 'absent';
export type View = (real: string) => Visibility;

export function viewOf(sandbox: SandboxProfile): View {
  if (sandbox.kind !== 'managed') return () => 'read';
  const prof = resolveProfile(sandbox);
  return (real) => {
    if (accessFor(prof, real) !== 'none') return 'read';
    const mentioned = prof.fullRead || prof.fullWrite || prof.rules.some((r) => isInside(real, r.path));
    return mentioned ? 'none' : 'absent';
  };
}

const errnoOf = (code: 'EACCES' | 'ENOENT') => Object.assign(new Error(code), { code });
function refusal(v: Visibility): NodeJS.ErrnoException | undefined {
  return v === 'read' ? undefined : errnoOf(v === 'none' ? 'EACCES' : 'ENOENT');
}
const isMissing = (e: unknown) => (e as NodeJS.ErrnoException)?.code === 'ENOENT';

/** An open directory, named by the path the client sees (`shown`) and judged where it really is. */
interface Dir {
  fh: FileHandle;
  shown: string;
  real: string;
}

class RootScan {
  readonly warnings: string[] = [];
  private bundle = 0;
  private readonly visited = new Set<string>();
  private readonly files = new Map<string, Promise<CapabilityFile | null>>();
  readonly skills: string[] = [];
  readonly manifests: string[] = [];

  constructor(private readonly view: View, private readonly root: string) {}

  /** Opens `shown` (following links) and judges where it really is; throws the error a sandboxed reader gets. */
  async openDir(shown: string): Promise<Dir> {
    const fh = await fsp.open(shown, C.O_RDONLY | C.O_DIRECTORY);
    try {
      const real = realOf(fh.fd);
      const refused = refusal(this.view(real));
      if (refused) throw refused;
      return { fh, shown, real };
    } catch (e) {
      await fh.close().catch(() => undefined);
      throw e;
    }
  }

  private entered = 0;

  async walk(shown: string, depth: number): Promise<void> {
    if (this.entered >= MAX_CAPABILITY_DIRS) {
      if (this.entered === MAX_CAPABILITY_DIRS) this.warnings.push(`capability scan reached its traversal limit (root: ${pathToUri(this.root)})`);
      this.entered++;
      return;
    }
    this.entered++;
    let fh: FileHandle;
    const subdirs: string[] = [];
    try {
      fh = await fsp.open(shown, C.O_RDONLY | C.O_DIRECTORY);
    } catch (e) {
      this.warnings.push(`failed to scan capability path ${pathToUri(shown)}: ${osMessage(e)}`);
      return;
    }
    try {
      const real = realOf(fh.fd);
      // Each real directory once (a link back up, or a second link to it), refused or not.
      if (this.visited.has(real)) return;
      this.visited.add(real);
      const refused = refusal(this.view(real));
      if (refused) throw refused;
      const names = (await fsp.readdir(at(fh.fd))).sort(byteOrder);
      // Looked at all at once (answers kept in name order): one directory of thousands of skills is one round of lstats, not thousands.
      const stats = await Promise.all(names.map((name) => fsp.lstat(at(fh.fd, name)).catch(() => undefined)));
      for (const [i, name] of names.entries()) {
        const st = stats[i];
        if (!st) continue;
        if (name === 'SKILL.md' && st.isFile()) this.skills.push(path.join(shown, name));
        const isDir = st.isDirectory() || (st.isSymbolicLink() && (await fsp.stat(at(fh.fd, name)).catch(() => undefined))?.isDirectory());
        if (isDir) subdirs.push(name);
      }
      for (const m of MANIFESTS) {
        const st = await fsp.lstat(at(fh.fd, m)).catch(() => undefined);
        if (st?.isFile()) {
          this.manifests.push(path.join(shown, m));
          break;
        }
      }
    } catch (e) {
      this.warnings.push(`failed to scan capability path ${pathToUri(shown)}: ${osMessage(e)}`);
      return;
    } finally {
      await fh.close().catch(() => undefined);
    }
    if (depth >= MAX_CAPABILITY_DEPTH) return;
    for (const name of subdirs) await this.walk(path.join(shown, name), depth + 1);
  }

  /**
   * Why a file below `dir` cannot even be looked at: `dir` is missing, and the nearest directory
   * above it that exists is hidden by the sandbox (EACCES, as a lookup inside it fails); else
   * undefined (simply missing).
   */
  private async hiddenAncestor(dir: string): Promise<NodeJS.ErrnoException | undefined> {
    for (let d = path.dirname(dir); ; d = path.dirname(d)) {
      try {
        const fh = await fsp.open(d, C.O_RDONLY | C.O_DIRECTORY);
        try {
          return this.view(realOf(fh.fd)) === 'none' ? errnoOf('EACCES') : undefined;
        } finally {
          await fh.close().catch(() => undefined);
        }
      } catch {
        if (d === path.dirname(d)) return undefined;
      }
    }
  }

  /**
   * The file at `shown` (a regular file, never a symlink), or null when there is none; a file
   * that cannot be inspected or read, or is over a bound, is null with a warning. Warnings and
   * the bundle's count follow the order of these calls, whatever order the reads finish in.
   */
  async file(shown: string): Promise<CapabilityFile | null> {
    // Each file is read (and counted in the bundle, and warned about) once.
    let known = this.files.get(shown);
    if (!known) {
      const loading = this.loaded(shown);
      const prev = this.committed;
      this.files.set(shown, (known = prev.then(() => loading).then((l) => this.commit(shown, l))));
      this.committed = known.then(() => undefined);
    }
    return known;
  }

  private committed: Promise<void> = Promise.resolve();
  private readonly loads = new Map<string, Promise<Loaded>>();

  /** Starts reading files that `file()` will be asked for soon (at most a few MiB held: each file is bounded). */
  prefetch(shown: string[]): void {
    for (const f of shown) this.loaded(f);
  }

  /** A prefetched file that will not be asked for after all: its bytes are let go. */
  discard(shown: string): void {
    if (!this.files.has(shown)) this.loads.delete(shown);
  }

  private loaded(shown: string): Promise<Loaded> {
    let l = this.loads.get(shown);
    if (!l) this.loads.set(shown, (l = this.load(shown)));
    return l;
  }

  private commit(shown: string, l: Loaded): CapabilityFile | null {
    this.loads.delete(shown);
    const uri = pathToUri(shown);
    switch (l.kind) {
      case 'none':
        return null;
      case 'warn':
        this.warnings.push(l.text);
        return null;
      case 'big':
        this.warnings.push(`capability file ${uri} exceeds the ${MAX_CAPABILITY_FILE_BYTES}-byte limit`);
        return null;
    }
    if (this.bundle + l.size > MAX_CAPABILITY_BUNDLE_BYTES) {
      this.warnings.push(`capability root bundle exceeds the ${MAX_CAPABILITY_BUNDLE_BYTES}-byte limit`);
      return null;
    }
    if (!l.bytes) {
      this.warnings.push(`capability file ${uri} changed while it was read`);
      return null;
    }
    const bad = utf8Error(l.bytes);
    if (bad) {
      this.warnings.push(`capability file ${uri} is not UTF-8: ${bad}`);
      return null;
    }
    this.bundle += l.bytes.length;
    return { path: uri, contents: l.bytes.toString('utf8') };
  }

  private async load(shown: string): Promise<Loaded> {
    const uri = pathToUri(shown);
    const warn = (text: string): Loaded => ({ kind: 'warn', text });
    let parent: Dir;
    try {
      parent = await this.openDir(path.dirname(shown));
    } catch (e) {
      const why = isMissing(e) ? await this.hiddenAncestor(path.dirname(shown)) : (e as NodeJS.ErrnoException).code === 'ENOTDIR' ? undefined : e;
      return why ? warn(`failed to inspect capability file ${uri}: ${osMessage(why)}`) : { kind: 'none' };
    }
    try {
      const name = path.basename(shown);
      let st: fs.Stats;
      try {
        st = await fsp.lstat(at(parent.fh.fd, name));
      } catch (e) {
        return isMissing(e) ? { kind: 'none' } : warn(`failed to inspect capability file ${uri}: ${osMessage(e)}`);
      }
      if (!st.isFile()) return { kind: 'none' };
      let fh: FileHandle;
      try {
        // O_NOFOLLOW: a link raced in after the lstat is refused (ELOOP), not followed.
        fh = await fsp.open(at(parent.fh.fd, name), C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
      } catch (e) {
        return warn(`failed to read capability file ${uri}: ${osMessage(e)}`);
      }
      try {
        const refused = refusal(this.view(realOf(fh.fd)));
        if (refused) throw refused;
        const size = (await fh.stat()).size;
        if (size > MAX_CAPABILITY_FILE_BYTES) return { kind: 'big' };
        // Read at most one byte past the bound: a file growing after the stat stays bounded.
        const buf = Buffer.alloc(size + 1);
        let n = 0;
        while (n < buf.length) {
          const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
          if (bytesRead === 0) break;
          n += bytesRead;
        }
        return { kind: 'data', size, bytes: n > size ? undefined : buf.subarray(0, n) };
      } catch (e) {
        return warn(`failed to read capability file ${uri}: ${osMessage(e)}`);
      } finally {
        await fh.close().catch(() => undefined);
      }
    } finally {
      await parent.fh.close().catch(() => undefined);
    }
  }
}

/** A file as read, before it is counted (RootScan.commit). `bytes` undefined: it grew while read. */
type Loaded = { kind: 'none' } | { kind: 'warn'; text: string } | { kind: 'big' } | { kind: 'data'; size: number; bytes: Buffer | undefined };

/**
 * Rust's Utf8Error text for the first invalid sequence of `b` (str::from_utf8, which the
 * reference reads each file with), or undefined when it is valid UTF-8.
 */
export function utf8Error(b: Uint8Array): string | undefined {
  const invalid = (i: number, len: number) => `invalid utf-8 sequence of ${len} bytes from index ${i}`;
  const incomplete = (i: number) => `incomplete utf-8 byte sequence from index ${i}`;
  const cont = (x: number | undefined) => x !== undefined && x >= 0x80 && x <= 0xbf;
  for (let i = 0; i < b.length; ) {
    const c = b[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    const width = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (width === 0) return invalid(i, 1);
    if (i + 1 >= b.length) return incomplete(i);
    const c1 = b[i + 1];
    const lo = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
    if (c1 < lo || c1 > hi) return invalid(i, 1);
    for (let k = 2; k < width; k++) {
      if (i + k >= b.length) return incomplete(i);
      if (!cont(b[i + k])) return invalid(i, k);
    }
    i += width;
  }
  return undefined;
}

/** Byte order of the UTF-8 names (Rust's sort of OsStrings), not UTF-16 code units. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

export async function discoverRoot(q: CapabilityRootQuery): Promise<CapabilityRootResult> {
  const uri = pathToUri(q.path);
  const result: CapabilityRootResult = { id: q.id, path: uri, plugin: null, skills: [], namespaceManifests: [], warnings: [], error: null };
  if (q.sandbox.kind === 'managed' && !CAN_PIN) {
    // Judging where an opened file really is needs /proc: refused rather than read unchecked.
    result.error = `sandboxed capability discovery is not supported on ${process.platform}`;
    return result;
  }
  const view = viewOf(q.sandbox);
  const scan = new RootScan(view, q.path);
  try {
    const st = await fsp.stat(q.path);
    if (!st.isDirectory()) {
      result.error = `capability root ${uri} is not a directory`;
      return result;
    }
    const fh = await fsp.open(q.path, C.O_RDONLY | C.O_DIRECTORY);
    try {
      // Not mounted under the sandbox: the reference's helper finds no such directory.
      if (view(realOf(fh.fd)) === 'absent') throw errnoOf('ENOENT');
    } finally {
      await fh.close();
    }
  } catch (e) {
    result.error = `failed to inspect capability root ${uri}: ${osMessage(e)}`;
    return result;
  }
  await scan.walk(q.path, 0);
  for (const m of MANIFESTS) {
    const manifest = await scan.file(path.join(q.path, m));
    if (!manifest) continue;
    result.plugin = { manifest, mcpConfig: await scan.file(path.join(q.path, '.mcp.json')), appsConfig: await scan.file(path.join(q.path, '.app.json')) };
    break;
  }
  for (const m of scan.manifests.sort(byteOrder)) {
    const f = await scan.file(m);
    if (f) result.namespaceManifests.push(f);
  }
  const skills = scan.skills.sort(byteOrder);
  const metadataOf = (s: string) => path.join(path.dirname(s), 'agents', 'openai.yaml');
  for (const [i, s] of skills.entries()) {
    // The next few skills' files are read while this one is counted (at most 2 × 16 bounded files held).
    scan.prefetch(skills.slice(i, i + PREFETCH).flatMap((f) => [f, metadataOf(f)]));
    const instructions = await scan.file(s);
    if (!instructions) {
      scan.discard(metadataOf(s));
      continue;
    }
    result.skills.push({ instructions, metadata: await scan.file(metadataOf(s)) });
  }
  result.warnings = scan.warnings;
  return result;
}

export async function discoverRoots(qs: CapabilityRootQuery[]): Promise<{ roots: CapabilityRootResult[] }> {
  const roots: CapabilityRootResult[] = [];
  // One root after another: each holds a few descriptors at a time, never one per root.
  for (const q of qs) roots.push(await discoverRoot(q));
  return { roots };
}
