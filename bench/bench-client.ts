// What a benchmark scenario needs from a client. Two implementations: the project's
// ExecServerClient (bench/exec-client-adapter.ts: websocket and in-process) and a minimal
// client on src/rpc alone (bench/raw-client.ts), kept as a fallback and a cross-check.
import type { FsWalkOptions } from '../src/protocol/types';

export interface BenchClient {
  /** Which client library carries the calls ("ExecServerClient" or "raw RpcConnection"). */
  readonly kind: string;
  /** One fs/getMetadata round trip. */
  stat(path: string): Promise<void>;
  /** Issues `count` fs/getMetadata calls at once; resolves when all answered. `onAnswer` counts progress. */
  statPipelined(path: string, count: number, onAnswer?: () => void): Promise<void>;
  /** process/start, resolves at process/exited with the exit code. */
  runToExit(argv: string[], cwd: string): Promise<number>;
  /** Runs a process, hands every output chunk (decoded, in seq order) to `onData`, resolves when closed. */
  runCollect(argv: string[], cwd: string, onData: (chunk: Uint8Array) => void): Promise<number>;
  readFile(path: string): Promise<Uint8Array>;
  /** fs/open + fs/readBlock until eof + fs/close. */
  readStream(path: string, onData: (chunk: Uint8Array) => void): Promise<void>;
  /**
   * All of `data` into `path`: streamed (fs/open {mode: "replace"} + fs/writeBlock of 1 MiB
   * blocks, a few in flight, + fs/close), or one fs/writeFile when `streamed` is false.
   */
  writeFile(path: string, data: Uint8Array, streamed: boolean): Promise<void>;
  /** fs/walk; resolves with the entry count. */
  walk(path: string, options: FsWalkOptions): Promise<number>;
  /**
   * The same server over a new connection that does not ask for binary output frames (process
   * output as base64 JSON, as for the reference and older clients). Absent: already JSON-only.
   */
  jsonOutputVariant?(): Promise<BenchClient>;
  close(): Promise<void>;
}
