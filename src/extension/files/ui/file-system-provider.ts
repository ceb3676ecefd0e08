// `exec-server://<environment>/<abs path>`: VS Code's view of an environment's files. The
// logic (create/overwrite semantics, error mapping, streaming) lives in core/exec-file-system.
import * as vscode from 'vscode';
import { ExecFileSystem, type ClientSource } from '../exec-file-system';
import { SCHEME } from '../../common';

export function remoteUri(environment: string, absPath: string): vscode.Uri {
  return vscode.Uri.from({ scheme: SCHEME, authority: environment, path: absPath });
}

export class ExecFileSystemProvider implements vscode.FileSystemProvider {
  private readonly changeEmitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changeEmitter.event;
  private readonly core: ExecFileSystem;

  constructor(
    clients: ClientSource,
    /** Maps a URI authority to a known environment name (authorities may come back lower-cased). */
    private readonly resolveEnvironment: (authority: string) => string,
    log: vscode.LogOutputChannel,
  ) {
    this.core = new ExecFileSystem(
      clients,
      {
        FileNotFound: (m) => vscode.FileSystemError.FileNotFound(m),
        FileExists: (m) => vscode.FileSystemError.FileExists(m),
        FileNotADirectory: (m) => vscode.FileSystemError.FileNotADirectory(m),
        FileIsADirectory: (m) => vscode.FileSystemError.FileIsADirectory(m),
        NoPermissions: (m) => vscode.FileSystemError.NoPermissions(m),
        Unavailable: (m) => vscode.FileSystemError.Unavailable(m),
        Unknown: (m) => new vscode.FileSystemError(m),
      },
      { log: (m) => log.info(m) },
    );
  }

  private env(uri: vscode.Uri): string {
    return this.resolveEnvironment(uri.authority);
  }
  private path(uri: vscode.Uri): string {
    return uri.path || '/';
  }

  watch(uri: vscode.Uri, options: { readonly recursive: boolean; readonly excludes: readonly string[] }): vscode.Disposable {
    const env = this.env(uri);
    const d = this.core.watch(env, this.path(uri), options.recursive, (events) =>
      this.changeEmitter.fire(events.map((e) => ({ type: e.type as vscode.FileChangeType, uri: uri.with({ path: e.path }) }))),
    );
    return new vscode.Disposable(() => d.dispose());
  }

  stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    return this.core.stat(this.env(uri), this.path(uri)) as Promise<vscode.FileStat>;
  }

  readDirectory(uri: vscode.Uri): Promise<[string, vscode.FileType][]> {
    return this.core.readDirectory(this.env(uri), this.path(uri)) as Promise<[string, vscode.FileType][]>;
  }

  createDirectory(uri: vscode.Uri): Promise<void> {
    return this.core.createDirectory(this.env(uri), this.path(uri));
  }

  readFile(uri: vscode.Uri): Promise<Uint8Array> {
    return this.core.readFile(this.env(uri), this.path(uri));
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array, options: { readonly create: boolean; readonly overwrite: boolean }): Promise<void> {
    await this.core.writeFile(this.env(uri), this.path(uri), content, options);
    // Servers without fs/watch would leave open editors and the explorer stale.
    this.changeEmitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  async delete(uri: vscode.Uri, options: { readonly recursive: boolean }): Promise<void> {
    await this.core.delete(this.env(uri), this.path(uri), options);
    this.changeEmitter.fire([{ type: vscode.FileChangeType.Deleted, uri }]);
  }

  async rename(oldUri: vscode.Uri, newUri: vscode.Uri, options: { readonly overwrite: boolean }): Promise<void> {
    await this.core.rename(this.env(oldUri), this.path(oldUri), this.env(newUri), this.path(newUri), options);
    this.changeEmitter.fire([
      { type: vscode.FileChangeType.Deleted, uri: oldUri },
      { type: vscode.FileChangeType.Created, uri: newUri },
    ]);
  }

  async copy(source: vscode.Uri, destination: vscode.Uri, options: { readonly overwrite: boolean }): Promise<void> {
    await this.core.copy(this.env(source), this.path(source), this.env(destination), this.path(destination), options);
    this.changeEmitter.fire([{ type: vscode.FileChangeType.Created, uri: destination }]);
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }
}
