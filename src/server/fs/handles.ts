// fs/open, fs/readBlock, fs/writeBlock, fs/close: read handles and replace streams
// (./replace-stream.ts) owned by one connection (closed with it; an unclosed stream is discarded).
import fs from 'node:fs';
import { ErrorCodes, Messages, RpcError, invalidRequest } from '../../protocol/errors';
import { markVerbatim } from '../../rpc/verbatim';
import { markBytes } from '../../rpc/bytes-members';
import { MAX_READ_BLOCK, MAX_WRITE_BLOCK } from '../../protocol/limits';
import { fsError } from '../os-errors';
import { ReplaceStream } from './replace-stream';

/** The reference's answer to readBlock on a replace handle and writeBlock on a read handle. */
const badHandle = () => fsError(Object.assign(new Error('EBADF'), { code: 'EBADF' }));

/** The reference's limit on handle ids (UTF-8 bytes). */
export const MAX_HANDLE_ID_BYTES = 32;

export class FileHandles {
  private readonly handles = new Map<string, fs.promises.FileHandle>();
  private readonly writers = new Map<string, ReplaceStream>();
  /** Ids being opened right now: reserved so a concurrent duplicate open fails. */
  private readonly opening = new Set<string>();
  private closed = false;

  constructor(private readonly maxHandles: number) {}

  /**
   * `verify` (a managed sandbox): given where the opened file really is (/proc/self/fd/N),
   * throws to refuse it — the very descriptor later read, whatever happens to the path.
   */
  async open(handleId: string, p: string, verify?: (real: string) => void, mode: 'read' | 'replace' = 'read'): Promise<{ handleId: string }> {
    if (Buffer.byteLength(handleId) > MAX_HANDLE_ID_BYTES) {
      throw invalidRequest(`file handle ID must not exceed ${MAX_HANDLE_ID_BYTES} bytes`);
    }
    if (this.handles.has(handleId) || this.writers.has(handleId) || this.opening.has(handleId)) {
      throw invalidRequest(Messages.handleExists(handleId));
    }
    if (this.count + this.opening.size >= this.maxHandles) {
      throw invalidRequest(`at most ${this.maxHandles} file handles may be open per connection`);
    }
    this.opening.add(handleId);
    if (mode === 'replace') {
      try {
        const w = await ReplaceStream.open(p, verify).catch((e) => {
          throw fsError(e);
        });
        if (this.closed) {
          await w.discard();
          throw invalidRequest(Messages.connectionClosed);
        }
        this.writers.set(handleId, w);
        return { handleId };
      } finally {
        this.opening.delete(handleId);
      }
    }
    try {
      // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, pinning a
      // thread-pool thread (shared by every async fs call) with no answer; the not-a-file
      // check below then refuses it. No effect on regular files.
      const fh = await fs.promises.open(p, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0)).catch((e) => {
        throw fsError(e);
      });
      try {
        if (verify) verify(fs.readlinkSync(`/proc/self/fd/${fh.fd}`));
        const st = await fh.stat();
        if (!st.isFile()) throw invalidRequest(`path \`${p}\` is not a file`);
        // The connection went away while we were opening.
        if (this.closed) throw invalidRequest(Messages.connectionClosed);
      } catch (e) {
        // Whatever went wrong after open(), the descriptor must not leak.
        await fh.close().catch(() => undefined);
        throw e;
      }
      this.handles.set(handleId, fh);
      return { handleId };
    } finally {
      this.opening.delete(handleId);
    }
  }

  /** `asBytes`: the connection negotiated binaryOutput — `chunk` is the Buffer itself (a binary frame / handed over in process). */
  async readBlock(handleId: string, offset: number, len: number, asBytes = false): Promise<{ chunk: string | Buffer; eof: boolean }> {
    if (len < 1 || len > MAX_READ_BLOCK) {
      throw invalidRequest(`file read block length must be between 1 and ${MAX_READ_BLOCK}`);
    }
    const fh = this.handles.get(handleId);
    if (!fh) {
      // As the reference: the failed handle is gone (a replace stream discarded: the old file stays).
      const w = this.writers.get(handleId);
      if (!w) throw unknownHandle(handleId);
      this.writers.delete(handleId);
      await w.discard();
      throw badHandle();
    }
    const buf = Buffer.allocUnsafe(len); // only the `got` bytes actually read are sent
    let got = 0;
    try {
      // Fill the block unless end of file comes first (a short read alone is not EOF).
      while (got < len) {
        const { bytesRead } = await fh.read(buf, got, len - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
    } catch (e) {
      throw fsError(e);
    }
    if (asBytes) return markBytes({ chunk: buf.subarray(0, got), eof: got < len }, 'chunk');
    return markVerbatim({ chunk: buf.subarray(0, got).toString('base64'), eof: got < len }, 'chunk');
  }

  /** A positional write into a replace stream (bounded like readBlock). */
  async writeBlock(handleId: string, offset: number, data: Buffer): Promise<Record<string, never>> {
    if (data.length < 1 || data.length > MAX_WRITE_BLOCK) {
      throw invalidRequest(`file write block length must be between 1 and ${MAX_WRITE_BLOCK}`);
    }
    const w = this.writers.get(handleId);
    // A read handle stays open (as on the reference).
    if (!w) throw this.handles.has(handleId) ? badHandle() : unknownHandle(handleId);
    try {
      await w.write(offset, data);
    } catch (e) {
      // A failed write ends the stream (the reference drops the handle too); the old file stays.
      this.writers.delete(handleId);
      await w.discard();
      throw fsError(e);
    }
    return {};
  }

  async close(handleId: string): Promise<Record<string, never>> {
    const w = this.writers.get(handleId);
    if (w) {
      this.writers.delete(handleId);
      await w.close().catch((e) => {
        throw fsError(e);
      });
      return {};
    }
    const fh = this.handles.get(handleId);
    this.handles.delete(handleId);
    await fh?.close().catch(() => undefined);
    return {};
  }

  get count(): number {
    return this.handles.size + this.writers.size;
  }

  closeAll(): void {
    this.closed = true;
    for (const fh of this.handles.values()) void fh.close().catch(() => undefined);
    this.handles.clear();
    // Never closed by the client: the old file stays.
    for (const w of this.writers.values()) void w.discard();
    this.writers.clear();
  }
}

const unknownHandle = (id: string) => new RpcError(ErrorCodes.NotFound, `unknown file handle \`${id}\``);
