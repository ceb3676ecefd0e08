// The client-side contract used by the VS Code layer, the CLI tests and the benchmarks.
// Implemented by ExecServerClient (src/client/client.ts) over any transport, including
// the in-process one. No Node or VS Code types here.
import type { Disposable, Event } from '../rpc/event';
import type {
  EnvironmentInfo,
  ExtensionMethod,
  FsChangeKind,
  FsDirectoryEntry,
  FsMetadata,
  FsWalkOptions,
  FsWalkResult,
  OutputStream,
  ParamsOf,
  RequestMethod,
  ResultOf,
  WriteStatus,
} from '../protocol/types';

export type ClientState = 'connecting' | 'connected' | 'recovering' | 'failed' | 'closed';

export interface StartProcessOptions {
  argv: string[];
  /** Absolute path (the client turns it into a file:// URI). */
  cwd: string;
  /** Exact environment of the child. Default: none (empty) unless envPolicy says otherwise. */
  env?: Record<string, string>;
  envPolicy?: ParamsOf<'process/start'>['envPolicy'];
  tty?: boolean;
  pipeStdin?: boolean;
  arg0?: string | null;
  rows?: number;
  cols?: number;
  /** Default: a fresh unique id. */
  processId?: string;
  /**
   * Flow control (servers with the `flowControl` extension): unacknowledged output bytes the
   * server may send before it stops reading the child. Default: the client's `outputWindow`;
   * 0 = no window. Ignored (no window) on servers without the extension.
   */
  outputWindow?: number;
  /**
   * With a window: output counts as consumed only when the consumer calls acknowledge()
   * (e.g. once a terminal has written it). Default false: consumed once delivered to onOutput.
   */
  manualAck?: boolean;
}

export interface OutputEvent {
  seq: number;
  stream: OutputStream;
  data: Uint8Array;
}

export interface ProcessHandle {
  readonly processId: string;
  /** Output in seq order, each chunk exactly once. */
  readonly onOutput: Event<OutputEvent>;
  readonly onExit: Event<{ exitCode: number }>;
  /** All output delivered; nothing follows. `error` is set if the process failed (e.g. output lost in recovery). */
  readonly onClose: Event<{ error?: string }>;
  readonly exitCode: number | undefined;
  /** Resolves with the exit code. */
  readonly exited: Promise<number>;
  /** Resolves once closed (all output delivered). */
  readonly closed: Promise<void>;
  write(data: Uint8Array | string): Promise<WriteStatus>;
  /** No-op (resolves false) on servers without process/resize. */
  resize(rows: number, cols: number): Promise<boolean>;
  /** Falls back to nothing on servers without process/closeStdin (resolves false). */
  closeStdin(): Promise<boolean>;
  interrupt(): Promise<void>;
  /** true if it was running. */
  terminate(): Promise<boolean>;
  /** The window granted to the server (bytes); 0 or absent when the process is not flow-controlled. */
  readonly outputWindow?: number;
  /** With manualAck: `bytes` more output bytes were consumed (the window reopens). No-op otherwise. */
  acknowledge?(bytes: number): void;
  /**
   * For a process without flow control (outputWindow 0: the server cannot pause it): while
   * held, the client stops reading its connection, so the server's socket fills and it stops
   * sending (memory stays bounded here; every byte still arrives once released). Released
   * automatically when the process closes. Holds the whole connection: release promptly.
   */
  holdIncoming?(held: boolean): void;
}

export interface FileChange {
  /** Absolute path. */
  path: string;
  kind: FsChangeKind;
}

/** How ExecFs.readFile may read a file. */
export interface WriteFileOptions {
  /**
   * Content larger than this is streamed (fs/open mode replace + fs/writeBlock, 64 KiB blocks,
   * each encoded only when sent) instead of one fs/writeFile holding the whole file as base64,
   * when the server advertises `fileWriteStreaming`. Content that would not fit in one message
   * on the link is streamed whatever this says (without the flag: refused, as before).
   */
  streamAboveBytes?: number;
}

export interface ReadFileOptions {
  /**
   * Files larger than this are streamed (fs/open + fs/readBlock, bounded blocks) instead of
   * arriving in one fs/readFile answer; costs one fs/getMetadata first. Files that would not
   * fit in one message on the link are streamed whatever this says.
   */
  streamAboveBytes?: number;
}

export interface ExecFs {
  readFile(path: string, opts?: ReadFileOptions): Promise<Uint8Array>;
  writeFile(path: string, data: Uint8Array, opts?: WriteFileOptions): Promise<void>;
  stat(path: string): Promise<FsMetadata>;
  readDirectory(path: string): Promise<FsDirectoryEntry[]>;
  createDirectory(path: string, recursive?: boolean): Promise<void>;
  remove(path: string, opts?: { recursive?: boolean; force?: boolean }): Promise<void>;
  copy(source: string, destination: string, recursive: boolean): Promise<void>;
  /** fs/rename where supported, else copy+remove (logged). */
  rename(source: string, destination: string, overwrite?: boolean): Promise<void>;
  canonicalize(path: string): Promise<string>;
  walk(path: string, options: FsWalkOptions): Promise<FsWalkResult>;
  /** Streams a file through fs/open + fs/readBlock + fs/close. */
  createReadStream(path: string, opts?: { blockSize?: number }): AsyncIterable<Uint8Array>;
  /** fs/watch where supported; rejects with RpcError -32601 otherwise. */
  watch(path: string, recursive: boolean, listener: (changes: FileChange[]) => void): Promise<Disposable>;
}

export interface ExecClient extends Disposable {
  readonly sessionId: string;
  readonly state: ClientState;
  readonly onDidChangeState: Event<ClientState>;
  /** Log lines for the host to show (fallbacks, reconnects, ...). */
  readonly onLog: Event<{ level: 'debug' | 'info' | 'warn' | 'error'; message: string }>;
  /** Whether the server implements a method beyond the reference. */
  supports(method: ExtensionMethod): boolean;
  readonly fs: ExecFs;
  request<M extends RequestMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>>;
  environmentInfo(): Promise<EnvironmentInfo>;
  startProcess(opts: StartProcessOptions): Promise<ProcessHandle>;
  /** Follows a running process of this (resumed) session from its retained output; see ExecServerClient.adoptProcess. */
  adoptProcess?(processId: string, opts?: Pick<StartProcessOptions, 'outputWindow' | 'manualAck'>): Promise<ProcessHandle>;
  close(): Promise<void>;
}
