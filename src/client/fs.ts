// ExecFs over the fs/* methods. Paths in: absolute paths; on the wire: file:// URIs.
import { randomUUID } from 'node:crypto';
import { ErrorCodes, RpcError } from '../protocol/errors';
import { MAX_READ_BLOCK, MAX_WRITE_BLOCK } from '../protocol/limits';
import type { FsDirectoryEntry, FsMetadata, FsWalkOptions, FsWalkResult, ParamsOf, RequestMethod, ResultOf } from '../protocol/types';
import type { Disposable } from '../rpc/event';
import { markVerbatim } from '../rpc/verbatim';
import { markBytes } from '../rpc/bytes-members';
import type { ExecFs, FileChange, ReadFileOptions, WriteFileOptions } from './api';
import { fromWireUri, toWireUri } from './uri';

/** What the fs helper needs from the client. */
export interface FsHost {
  request<M extends RequestMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>>;
  /** False once the server answered MethodNotFound for it (the host's request() records that). */
  supports(method: 'fs/rename' | 'fs/watch'): boolean;
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
  /** Largest answer the current link can carry (bytes), undefined when unlimited. */
  maxMessageBytes?(): number | undefined;
  registerWatch(watchId: string, listener: (changes: FileChange[]) => void): Disposable;
  /** Does the server advertise this `environmentInfo.capabilities` flag on the current connection? */
  capability?(name: 'fileWriteStreaming'): boolean;
  /** Did the server enable binaryOutput on the current connection (then fs/writeBlock may carry raw bytes)? */
  binaryFrames?(): boolean;
}

export const DEFAULT_READ_BLOCK = 256 * 1024;
/** Room for the JSON envelope around fs/readFile's or fs/readBlock's base64. */
const READ_FILE_ENVELOPE_BYTES = 4096;
const base64Length = (bytes: number) => Math.ceil(bytes / 3) * 4;
/** createReadStream keeps at most this many bytes of blocks requested ahead … */
export const READ_AHEAD_BYTES = 4 * 1024 * 1024;
/** … and at most this many blocks. */
export const MAX_READ_AHEAD_BLOCKS = 4;
/**
 * A streamed write's block: under V8's 128 KiB large-object size as base64 (87 KiB). With 1 MiB
 * blocks (1.4 MB messages) each request's strings were fresh mmapped memory on both ends, and
 * our server spent ~1.8× the CPU per byte (measured: 820 vs 460 ms per 32 MiB); the reference
 * moved the same bytes either way.
 */
export const STREAM_WRITE_BLOCK = 64 * 1024;
/** A streamed write's block as raw bytes in a binary frame (no strings on either end): measured in docs/performance.md. */
export const STREAM_WRITE_BLOCK_BINARY = 64 * 1024;
/** … with at most this many bytes of blocks in flight. */
export const WRITE_AHEAD_BYTES = 4 * 1024 * 1024;

export class ClientFs implements ExecFs {
  constructor(private readonly host: FsHost) {}

  /**
   * The one owner of whole-file reads (the extension's file system provider reads through it):
   * fs/readFile, unless the answer could not fit in one message on this link (a websocket frame
   * over maxPayload ends the connection) or the file is larger than `streamAboveBytes`: then the
   * size is asked first (one more round trip, only on links with a limit or with that option)
   * and a larger file is streamed with fs/readBlock instead. A small file costs at most
   * fs/getMetadata + fs/readFile.
   */
  async readFile(path: string, opts: ReadFileOptions = {}): Promise<Uint8Array> {
    const limit = this.host.maxMessageBytes?.();
    const { streamAboveBytes } = opts;
    if (limit !== undefined || streamAboveBytes !== undefined) {
      const meta = await this.stat(path);
      const tooBigForOneAnswer = limit !== undefined && base64Length(meta.size) + READ_FILE_ENVELOPE_BYTES > limit;
      // Answered here as the reference's io::Error for EISDIR (errno 21, src/protocol/os-error.ts), saving the round trip.
      if (meta.isDirectory) throw new RpcError(ErrorCodes.InvalidRequest, `cannot read \`${path}\`: Is a directory (os error 21)`);
      if (meta.isFile && (tooBigForOneAnswer || (streamAboveBytes !== undefined && meta.size > streamAboveBytes))) return this.readStreamed(path, meta.size);
    }
    const r = await this.host.request('fs/readFile', { path: toWireUri(path) });
    return Buffer.from(r.dataBase64, 'base64');
  }

  /** fs/readBlock's limit, or less when a block's base64 answer would not fit in one message on this link. */
  private largestBlock(): number {
    const limit = this.host.maxMessageBytes?.();
    if (limit === undefined) return MAX_READ_BLOCK;
    return Math.max(1, Math.min(MAX_READ_BLOCK, Math.floor((limit - READ_FILE_ENVELOPE_BYTES) / 4) * 3));
  }

  /** The whole file through createReadStream (1 MiB blocks, read ahead); `sizeHint` presizes the result. */
  private async readStreamed(path: string, sizeHint: number): Promise<Uint8Array> {
    let out = Buffer.allocUnsafe(sizeHint);
    let used = 0;
    for await (const chunk of this.createReadStream(path, { blockSize: this.largestBlock() })) {
      if (used + chunk.length > out.length) {
        // The file grew while being read: keep everything that arrives.
        const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, used + chunk.length));
        out.copy(bigger, 0, 0, used);
        out = bigger;
      }
      out.set(chunk, used);
      used += chunk.length;
    }
    return out.subarray(0, used);
  }
  async writeFile(path: string, data: Uint8Array, opts: WriteFileOptions = {}): Promise<void> {
    const limit = this.host.maxMessageBytes?.();
    const tooBigForOneRequest = limit !== undefined && base64Length(data.length) + READ_FILE_ENVELOPE_BYTES > limit;
    const large = tooBigForOneRequest || (opts.streamAboveBytes !== undefined && data.length > opts.streamAboveBytes);
    if (large && data.length > 0 && this.host.capability?.('fileWriteStreaming')) return this.writeStreamed(path, data);
    const params = markVerbatim({ path: toWireUri(path), dataBase64: Buffer.from(data).toString('base64') }, 'dataBase64');
    await this.host.request('fs/writeFile', params);
  }
  /**
   * fs/open {mode: replace} + fs/writeBlock + fs/close. Only the blocks in flight exist as
   * base64 (at most WRITE_AHEAD_BYTES), never the whole file. On this project's
   * server the file is replaced at fs/close, atomically, and a failed block leaves the old file;
   * the reference truncates at open and writes in place (docs/protocol.md).
   */
  private async writeStreamed(path: string, data: Uint8Array): Promise<void> {
    const binary = this.host.binaryFrames?.() === true;
    const block = Math.min(binary ? STREAM_WRITE_BLOCK_BINARY : STREAM_WRITE_BLOCK, this.largestWriteBlock(binary));
    const window = Math.max(1, Math.floor(WRITE_AHEAD_BYTES / block));
    const handleId = `w-${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    await this.host.request('fs/open', { handleId, path: toWireUri(path), mode: 'replace' });
    const inFlight: Promise<unknown>[] = [];
    try {
      for (let offset = 0; offset < data.length; offset += block) {
        const bytes = Buffer.from(data.buffer, data.byteOffset + offset, Math.min(block, data.length - offset));
        // Raw bytes in a binary frame (in process: handed over) where the server enabled binaryOutput, else base64.
        const params = binary ? markBytes({ handleId, offset, chunk: bytes }, 'chunk') : markVerbatim({ handleId, offset, chunk: bytes.toString('base64') }, 'chunk');
        const p = this.host.request('fs/writeBlock', params);
        p.catch(() => {}); // awaited below; a later block's failure must not go unhandled meanwhile
        inFlight.push(p);
        if (inFlight.length >= window) await inFlight.shift();
      }
      while (inFlight.length) await inFlight.shift();
    } catch (e) {
      await Promise.allSettled(inFlight);
      // A failed block poisons the stream on our server: this close discards the new file.
      await this.host.request('fs/close', { handleId }).catch(() => undefined);
      throw e;
    }
    await this.host.request('fs/close', { handleId });
  }

  /** fs/writeBlock's limit, or less when a block's request (base64, or raw bytes in a binary frame) would not fit in one message on this link. */
  private largestWriteBlock(binary: boolean): number {
    const limit = this.host.maxMessageBytes?.();
    if (limit === undefined) return MAX_WRITE_BLOCK;
    const room = limit - READ_FILE_ENVELOPE_BYTES;
    return Math.max(1, Math.min(MAX_WRITE_BLOCK, binary ? room : Math.floor(room / 4) * 3));
  }

  stat(path: string): Promise<FsMetadata> {
    return this.host.request('fs/getMetadata', { path: toWireUri(path) });
  }
  async readDirectory(path: string): Promise<FsDirectoryEntry[]> {
    return (await this.host.request('fs/readDirectory', { path: toWireUri(path) })).entries;
  }
  async createDirectory(path: string, recursive = true): Promise<void> {
    await this.host.request('fs/createDirectory', { path: toWireUri(path), recursive });
  }
  async remove(path: string, opts: { recursive?: boolean; force?: boolean } = {}): Promise<void> {
    await this.host.request('fs/remove', { path: toWireUri(path), recursive: opts.recursive ?? true, force: opts.force ?? true });
  }
  async copy(source: string, destination: string, recursive: boolean): Promise<void> {
    await this.host.request('fs/copy', { sourcePath: toWireUri(source), destinationPath: toWireUri(destination), recursive });
  }
  async rename(source: string, destination: string, overwrite = false): Promise<void> {
    if (this.host.supports('fs/rename')) {
      try {
        await this.host.request('fs/rename', { sourcePath: toWireUri(source), destinationPath: toWireUri(destination), overwrite });
        return;
      } catch (e) {
        if (!(e instanceof RpcError && e.code === ErrorCodes.MethodNotFound)) throw e;
      }
    }
    // Fallback for servers without fs/rename (the reference): not atomic.
    this.host.log('warn', `fs/rename unsupported by the server: renaming ${source} → ${destination} by copy + remove (not atomic)`);
    if (!overwrite && (await this.exists(destination))) {
      throw new RpcError(ErrorCodes.InvalidRequest, `destination already exists: ${destination}`);
    }
    const meta = await this.stat(source);
    if (overwrite && (await this.exists(destination))) await this.remove(destination, { recursive: true, force: true });
    await this.copy(source, destination, meta.isDirectory);
    await this.remove(source, { recursive: true, force: false });
  }
  async canonicalize(path: string): Promise<string> {
    return fromWireUri((await this.host.request('fs/canonicalize', { path: toWireUri(path) })).path);
  }
  async walk(path: string, options: FsWalkOptions): Promise<FsWalkResult> {
    const r = await this.host.request('fs/walk', { path: toWireUri(path), options });
    return {
      entries: r.entries.map((e) => ({ ...e, path: fromWireUri(e.path) })),
      errors: r.errors.map((e) => ({ ...e, path: fromWireUri(e.path) })),
      truncated: r.truncated,
    };
  }

  /**
   * fs/open + fs/readBlock until eof; fs/close always runs (also on early break or error).
   * After the first full block, up to READ_AHEAD_BYTES of later blocks are requested ahead so
   * the link stays busy while the caller consumes (a small file still costs one readBlock).
   */
  async *createReadStream(path: string, opts: { blockSize?: number } = {}): AsyncIterable<Uint8Array> {
    const len = Math.max(1, Math.min(opts.blockSize ?? DEFAULT_READ_BLOCK, this.largestBlock()));
    const window = Math.max(2, Math.min(MAX_READ_AHEAD_BLOCKS, Math.floor(READ_AHEAD_BYTES / len)));
    // The reference limits handle ids to 32 bytes.
    const handleId = `h-${randomUUID().replace(/-/g, "").slice(0, 24)}`;
    await this.host.request('fs/open', { handleId, path: toWireUri(path) });
    const inFlight: Promise<ResultOf<'fs/readBlock'>>[] = [];
    let nextOffset = 0; // where the next request reads
    let depth = 1; // blocks requested at once: 1 until the file proved longer than one block
    const requestBlock = () => {
      const p = this.host.request('fs/readBlock', { handleId, offset: nextOffset, len });
      p.catch(() => {}); // a dropped read-ahead's failure is nobody's error; awaited ones still throw
      inFlight.push(p);
      nextOffset += len;
    };
    try {
      let offset = 0;
      for (;;) {
        while (inFlight.length < depth) requestBlock();
        const r = await inFlight.shift()!;
        // Raw bytes from a binary frame (or in process) when binaryOutput was negotiated, else base64.
        const raw = r.chunk as string | Uint8Array;
        const chunk = typeof raw === 'string' ? Buffer.from(raw, 'base64') : raw;
        offset += chunk.length;
        if (chunk.length) yield chunk;
        if (r.eof || chunk.length === 0) return;
        if (chunk.length < len) {
          // A short block without eof: the blocks requested ahead start at the wrong offsets.
          inFlight.length = 0;
          nextOffset = offset;
        } else {
          depth = window;
        }
      }
    } finally {
      await Promise.allSettled(inFlight);
      await this.host.request('fs/close', { handleId }).catch((e: unknown) => {
        this.host.log('debug', `fs/close ${handleId} failed: ${e instanceof Error ? e.message : String(e)}`);
      });
    }
  }

  async watch(path: string, recursive: boolean, listener: (changes: FileChange[]) => void): Promise<Disposable> {
    if (!this.host.supports('fs/watch')) {
      throw new RpcError(ErrorCodes.MethodNotFound, 'fs/watch is not supported by this exec-server (reference servers have no file watching)');
    }
    const watchId = `w-${randomUUID().replace(/-/g, "").slice(0, 24)}`;
    const reg = this.host.registerWatch(watchId, listener);
    try {
      await this.host.request('fs/watch', { watchId, path: toWireUri(path), recursive });
    } catch (e) {
      reg.dispose();
      throw e;
    }
    let disposed = false;
    return {
      dispose: () => {
        if (disposed) return;
        disposed = true;
        reg.dispose();
        this.host.request('fs/unwatch', { watchId }).catch(() => {});
      },
    };
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await this.stat(path);
      return true;
    } catch (e) {
      if (e instanceof RpcError && e.code === ErrorCodes.NotFound) return false;
      throw e;
    }
  }
}
