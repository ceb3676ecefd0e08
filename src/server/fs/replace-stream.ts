// fs/open {mode: "replace"} + fs/writeBlock: a write stream that replaces a file atomically.
// The blocks go into a temporary file beside the target, in the target's directory held open
// (O_PATH) from the open on; fs/close renames it over the target within that same directory.
// A reader sees the old file or the whole new one, never part of it; a stream that fails or is
// never closed (the connection went away) leaves the old file as it was. The reference instead
// truncates the target in place at open and writes through (docs/protocol.md).
// Under a managed sandbox, `verify` is given where the file will really land (the held
// directory's real path + name) at open and again at close: a directory swapped for a symlink
// mid-stream changes neither where the blocks go nor where the rename happens.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { uploadEnded } from '../upload-end';
import { CAN_PIN } from './confined';

const O_PATH = 0o10000000; // Linux
/** One writev's bounds: IOV_MAX (Linux), and bytes per thread-pool call. */
const MAX_IOV = 1024;
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

/** Writes every byte of `buffers` at `position` (a short writev continues where it stopped). */
async function writevAt(fh: fs.promises.FileHandle, buffers: Buffer[], position: number): Promise<void> {
  let rest = buffers;
  let at = position;
  while (rest.length > 0) {
    const { bytesWritten } = rest.length === 1 ? await fh.write(rest[0], 0, rest[0].length, at) : await fh.writev(rest, at);
    at += bytesWritten;
    let skip = bytesWritten;
    const next: Buffer[] = [];
    for (const b of rest) {
      if (skip >= b.length) {
        skip -= b.length;
        continue;
      }
      next.push(skip > 0 ? b.subarray(skip) : b);
      skip = 0;
    }
    if (next.length > 0 && bytesWritten === 0) throw errno('EIO', 'write', 'short write');
    rest = next;
  }
}

function errno(code: string, syscall: string, p: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${syscall} '${p}'`), { code, syscall, path: p });
}

export class ReplaceStream {
  private failed = false;
  private done = false;
  /** Bytes written so far (for the idle collector at the end: uploadEnded). */
  private written = 0;

  private constructor(
    private readonly dirFd: number | undefined,
    private readonly dir: string,
    private readonly name: string,
    private readonly tmp: string,
    private readonly fh: fs.promises.FileHandle,
    /** The sandbox check again, on where the file lands now (at close). */
    private readonly recheck?: () => void,
  ) {}

  /** Opens the stream for `p` (a symlink as the last component is followed, as an in-place write would). */
  static async open(p: string, verify?: (real: string) => void): Promise<ReplaceStream> {
    let target: string;
    try {
      target = await fs.promises.realpath(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      target = path.join(await fs.promises.realpath(path.dirname(p)), path.basename(p)); // ENOENT: no parent
    }
    const name = path.basename(target);
    let dirFd: number | undefined;
    let dir = path.dirname(target);
    if (CAN_PIN) {
      dirFd = fs.openSync(dir, O_PATH | fs.constants.O_DIRECTORY);
      dir = `/proc/self/fd/${dirFd}`;
    }
    try {
      const real = () => (dirFd === undefined ? target : path.join(fs.readlinkSync(dir), name));
      verify?.(real());
      let mode = 0o666;
      const st = await fs.promises.lstat(path.join(dir, name)).catch(() => undefined);
      if (st?.isDirectory()) throw errno('EISDIR', 'open', target);
      if (st?.isFile()) mode = st.mode & 0o7777;
      const tmp = `.${name.slice(0, 180)}.${randomBytes(6).toString('hex')}.exec-server-tmp`;
      const c = fs.constants;
      const fh = await fs.promises.open(path.join(dir, tmp), c.O_WRONLY | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW, 0o600);
      // The replaced file keeps its permission bits (the temporary one is private until then).
      await fh.chmod(st?.isFile() ? mode : 0o666 & ~process.umask()).catch(async (e) => {
        await fh.close().catch(() => undefined);
        await fs.promises.unlink(path.join(dir, tmp)).catch(() => undefined);
        throw e;
      });
      return new ReplaceStream(dirFd, dir, name, tmp, fh, verify && (() => verify(real())));
    } catch (e) {
      if (dirFd !== undefined) fs.closeSync(dirFd);
      throw e;
    }
  }

  /**
   * A positional write (a gap reads as NUL bytes, an overlap overwrites), in call order. Blocks
   * that arrive while a write is in flight are queued, and each run of contiguous ones goes to
   * the file in one writev: a thread-pool round trip per 64 KiB block (a futex wake and two
   * context switches on this VM) was most of our server's cost per streamed byte
   * (docs/performance.md). A failure poisons the stream: every queued block fails with it and
   * close then keeps the old file.
   */
  write(offset: number, data: Buffer): Promise<void> {
    if (this.done || this.failed) return Promise.reject(this.failure ?? errno('EBADF', 'write', this.name));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ offset, data, resolve, reject });
      if (!this.pumping) this.pumping = this.pump();
    });
  }

  private readonly queue: { offset: number; data: Buffer; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private pumping: Promise<void> | undefined;
  private failure: unknown;

  private async pump(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = [this.queue.shift()!];
        let end = batch[0].offset + batch[0].data.length;
        let bytes = batch[0].data.length;
        while (this.queue.length > 0 && this.queue[0].offset === end && batch.length < MAX_IOV && bytes < MAX_BATCH_BYTES) {
          const b = this.queue.shift()!;
          batch.push(b);
          end += b.data.length;
          bytes += b.data.length;
        }
        try {
          await writevAt(this.fh, batch.map((b) => b.data), batch[0].offset);
        } catch (e) {
          this.failed = true;
          this.failure = e;
          for (const b of batch) b.reject(e);
          for (const b of this.queue.splice(0)) b.reject(e);
          return;
        }
        this.written += bytes;
        for (const b of batch) b.resolve();
      }
    } finally {
      this.pumping = undefined;
    }
  }

  /** Until no write is in flight (close and discard must not close the descriptor under one). */
  private async settled(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  /** Renames the new file over the target (or, after a failed write, discards it). Once. */
  async close(): Promise<void> {
    if (this.done) return;
    this.done = true; // later writes fail; the queued ones still land first
    await this.settled();
    uploadEnded(this.written);
    if (this.failed) return this.drop();
    try {
      await this.fh.close();
      this.recheck?.();
      await fs.promises.rename(path.join(this.dir, this.tmp), path.join(this.dir, this.name));
    } catch (e) {
      await fs.promises.unlink(path.join(this.dir, this.tmp)).catch(() => undefined);
      throw e;
    } finally {
      this.closeDir();
    }
  }

  /** Drops the new file: the target stays as it was. */
  async discard(): Promise<void> {
    if (this.done) return;
    this.done = true;
    // Blocks still queued fail; the one in flight finishes before the descriptor closes.
    const gone = errno('EBADF', 'write', this.name);
    for (const b of this.queue.splice(0)) b.reject(gone);
    await this.settled();
    uploadEnded(this.written);
    await this.drop();
  }

  private async drop(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    await fs.promises.unlink(path.join(this.dir, this.tmp)).catch(() => undefined);
    this.closeDir();
  }

  private closeDir(): void {
    if (this.dirFd !== undefined) fs.closeSync(this.dirFd);
  }
}
