// The logic of the `exec-server://<environment>/<abs path>` FileSystemProvider, without
// importing `vscode`: the host injects how to reach an environment's client and how to build
// FileSystemError values, so the create/overwrite semantics and the error mapping are unit-
// tested in plain Node against a real server. src/extension/files/ui/file-system-provider.ts adapts Uris.
import * as path from 'node:path';
import type { ExecClient } from '../../client/api';
import { ErrorCodes, RpcError } from '../../protocol/errors';
import { osErrorCode } from '../../protocol/os-error';
import type { FsMetadata } from '../../protocol/types';
import type { Disposable } from '../../rpc/event';

/** Same values as vscode.FileType / vscode.FileChangeType. */
export const FileType = { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 } as const;
export const FileChangeType = { Changed: 1, Created: 2, Deleted: 3 } as const;

export interface FileStat {
  type: number;
  ctime: number;
  mtime: number;
  size: number;
}

/** vscode.FileSystemError's factories (the host passes the real ones). */
export interface FsErrorFactory {
  FileNotFound(message: string): Error;
  FileExists(message: string): Error;
  FileNotADirectory(message: string): Error;
  FileIsADirectory(message: string): Error;
  NoPermissions(message: string): Error;
  Unavailable(message: string): Error;
  Unknown(message: string): Error;
}

export interface ClientSource {
  /** Connects lazily; rejects if the environment is unknown or unreachable. */
  getClient(environment: string): Promise<ExecClient>;
}

export interface ChangeEvent {
  environment: string;
  path: string;
  type: number;
}

/**
 * Maps a client/server error to the FileSystemError kind VS Code expects, by its codes: the
 * JSON-RPC code (-32004 not found; connection closed / timed out → Unavailable), then the errno
 * the answer reports (src/protocol/os-error.ts). Never by the message's words: a path in it
 * may say anything ("path `/tmp/no such file` is not a file" is not a missing file).
 */
export function mapFsError(e: unknown, target: string, errors: FsErrorFactory): Error {
  const message = e instanceof Error ? e.message : String(e);
  const text = `${target}: ${message}`;
  const code = e instanceof RpcError ? e.code : undefined;
  if (code === ErrorCodes.NotFound) return errors.FileNotFound(text);
  if (code === ErrorCodes.ConnectionClosed || code === ErrorCodes.RequestTimeout) return errors.Unavailable(text);
  switch (osErrorCode(e)) {
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return errors.NoPermissions(text);
    case 'EEXIST':
      return errors.FileExists(text);
    case 'ENOTDIR':
      return errors.FileNotADirectory(text);
    case 'EISDIR':
      return errors.FileIsADirectory(text);
    case 'ENOENT':
      return errors.FileNotFound(text);
    default:
      return errors.Unknown(text);
  }
}

function typeOf(m: { isDirectory: boolean; isFile: boolean; isSymlink?: boolean }): number {
  const base = m.isDirectory ? FileType.Directory : m.isFile ? FileType.File : FileType.Unknown;
  return base | (m.isSymlink ? FileType.SymbolicLink : 0);
}

export interface ExecFileSystemOptions {
  /** Files larger than this are read through fs/open + fs/readBlock, and saved through fs/writeBlock (default 1 MiB). */
  streamThresholdBytes?: number;
  log?(message: string): void;
}

export class ExecFileSystem {
  private readonly streamThreshold: number;
  private readonly watchUnsupportedLogged = new Set<string>();
  private readonly errors: FsErrorFactory;

  constructor(
    private readonly clients: ClientSource,
    errors: FsErrorFactory,
    private readonly options: ExecFileSystemOptions = {},
  ) {
    this.errors = markedFactory(errors);
    this.streamThreshold = options.streamThresholdBytes ?? 1024 * 1024;
  }

  stat(env: string, p: string): Promise<FileStat> {
    return this.run(env, p, async (c) => {
      const m = await c.fs.stat(p);
      return { type: typeOf(m), ctime: m.createdAtMs, mtime: m.modifiedAtMs, size: m.size };
    });
  }

  readDirectory(env: string, p: string): Promise<[string, number][]> {
    return this.run(env, p, async (c) => {
      const entries = await c.fs.readDirectory(p);
      const out = entries.map((e): [string, number] => [e.fileName, typeOf(e)]);
      // Neither file nor directory (e.g. a symlink on a server that does not follow it):
      // ask for the target's type, a few at a time; a dangling link stays Unknown.
      const unknown = out.filter((e) => e[1] === FileType.Unknown).slice(0, 256);
      for (let i = 0; i < unknown.length; i += 16) {
        await Promise.all(
          unknown.slice(i, i + 16).map(async (e) => {
            const m = await c.fs.stat(path.posix.join(p, e[0])).catch(() => undefined);
            if (m) e[1] = typeOf(m);
          }),
        );
      }
      return out;
    });
  }

  /** Through the client's readFile, the one owner of large-file reads: a small file costs fs/getMetadata + fs/readFile. */
  readFile(env: string, p: string): Promise<Uint8Array> {
    return this.run(env, p, (c) => c.fs.readFile(p, { streamAboveBytes: this.streamThreshold }));
  }

  writeFile(env: string, p: string, content: Uint8Array, opts: { create: boolean; overwrite: boolean }): Promise<void> {
    return this.run(env, p, async (c) => {
      const m = await this.statOrUndefined(c, p);
      if (m?.isDirectory) throw this.errors.FileIsADirectory(p);
      if (!m && !opts.create) throw this.errors.FileNotFound(p);
      if (m && !opts.overwrite) throw this.errors.FileExists(p);
      if (!m) await this.requireParentDirectory(c, p);
      // Large saves stream (fs/writeBlock) where the server can: no whole-file base64 request.
      await c.fs.writeFile(p, content, { streamAboveBytes: this.streamThreshold });
    });
  }

  delete(env: string, p: string, opts: { recursive: boolean }): Promise<void> {
    return this.run(env, p, async (c) => {
      await c.fs.stat(p); // FileNotFound if missing: fs/remove with force would succeed silently
      await c.fs.remove(p, { recursive: opts.recursive, force: false });
    });
  }

  createDirectory(env: string, p: string): Promise<void> {
    return this.run(env, p, async (c) => {
      if (await this.statOrUndefined(c, p)) throw this.errors.FileExists(p);
      await this.requireParentDirectory(c, p);
      await c.fs.createDirectory(p, false);
    });
  }

  rename(env: string, from: string, toEnv: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    return this.run(env, from, async (c) => {
      const src = await c.fs.stat(from);
      if (toEnv !== env) {
        await this.copyAcross(c, from, src, toEnv, to, opts.overwrite);
        await c.fs.remove(from, { recursive: true, force: false });
        return;
      }
      const dst = await this.statOrUndefined(c, to);
      if (dst && !opts.overwrite) throw this.errors.FileExists(to);
      if (!dst) await this.requireParentDirectory(c, to);
      // The client falls back to copy+remove on servers without fs/rename.
      await c.fs.rename(from, to, opts.overwrite);
    });
  }

  copy(env: string, from: string, toEnv: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    return this.run(env, from, async (c) => {
      const src = await c.fs.stat(from);
      if (toEnv !== env) return this.copyAcross(c, from, src, toEnv, to, opts.overwrite);
      const dst = await this.statOrUndefined(c, to);
      if (dst && !opts.overwrite) throw this.errors.FileExists(to);
      if (!dst) await this.requireParentDirectory(c, to);
      if (dst) await c.fs.remove(to, { recursive: true, force: true });
      await c.fs.copy(from, to, src.isDirectory);
    });
  }

  /** Subscribes to fs/watch; servers without it simply produce no events (logged once). */
  watch(env: string, p: string, recursive: boolean, onChange: (events: ChangeEvent[]) => void): Disposable {
    let disposed = false;
    let inner: Disposable | undefined;
    this.clients
      .getClient(env)
      .then((c) =>
        c.fs.watch(p, recursive, (changes) => {
          if (disposed) return;
          onChange(
            changes.map((ch) => ({
              environment: env,
              path: ch.path,
              type: ch.kind === 'created' ? FileChangeType.Created : ch.kind === 'deleted' ? FileChangeType.Deleted : FileChangeType.Changed,
            })),
          );
        }),
      )
      .then(
        (d) => {
          if (disposed) d.dispose();
          else inner = d;
        },
        (e) => {
          if (e instanceof RpcError && e.code === ErrorCodes.MethodNotFound) {
            if (!this.watchUnsupportedLogged.has(env)) {
              this.watchUnsupportedLogged.add(env);
              this.options.log?.(`${env}: the server has no fs/watch; the explorer will not refresh by itself`);
            }
          } else this.options.log?.(`${env}: watch ${p} failed: ${e instanceof Error ? e.message : e}`);
        },
      );
    return {
      dispose: () => {
        disposed = true;
        inner?.dispose();
      },
    };
  }

  private async copyAcross(c: ExecClient, from: string, src: FsMetadata, toEnv: string, to: string, overwrite: boolean): Promise<void> {
    if (src.isDirectory) throw this.errors.Unknown(`${from}: copying a folder between environments is not supported`);
    const data = await c.fs.readFile(from);
    const target = await this.clients.getClient(toEnv);
    const dst = await this.statOrUndefined(target, to);
    if (dst && !overwrite) throw this.errors.FileExists(to);
    await target.fs.writeFile(to, data);
  }

  private async requireParentDirectory(c: ExecClient, p: string): Promise<void> {
    const parent = path.posix.dirname(p);
    const pm = await this.statOrUndefined(c, parent);
    if (!pm) throw this.errors.FileNotFound(parent);
    if (!pm.isDirectory) throw this.errors.FileNotADirectory(parent);
  }

  private async statOrUndefined(c: ExecClient, p: string): Promise<FsMetadata | undefined> {
    try {
      return await c.fs.stat(p);
    } catch (e) {
      if (e instanceof RpcError && e.code === ErrorCodes.NotFound) return undefined;
      throw e;
    }
  }

  private async run<T>(env: string, target: string, f: (c: ExecClient) => Promise<T>): Promise<T> {
    let client: ExecClient;
    try {
      client = await this.clients.getClient(env);
    } catch (e) {
      throw this.errors.Unavailable(`${env}: ${e instanceof Error ? e.message : String(e)}`);
    }
    try {
      return await f(client);
    } catch (e) {
      if (this.isMapped(e)) throw e;
      throw mapFsError(e, target, this.errors);
    }
  }

  private isMapped(e: unknown): boolean {
    // Errors built by our factory are already FileSystemErrors: pass them through.
    return typeof e === 'object' && e !== null && (e as { __execFs?: boolean }).__execFs === true;
  }
}

/** Wraps a factory so that errors it builds are recognised as already mapped. */
export function markedFactory(f: FsErrorFactory): FsErrorFactory {
  const mark = (e: Error) => Object.assign(e, { __execFs: true });
  return {
    FileNotFound: (m) => mark(f.FileNotFound(m)),
    FileExists: (m) => mark(f.FileExists(m)),
    FileNotADirectory: (m) => mark(f.FileNotADirectory(m)),
    FileIsADirectory: (m) => mark(f.FileIsADirectory(m)),
    NoPermissions: (m) => mark(f.NoPermissions(m)),
    Unavailable: (m) => mark(f.Unavailable(m)),
    Unknown: (m) => mark(f.Unknown(m)),
  };
}
