// A minimal exec-server client built only from src/rpc/connection.ts and the `ws` package.
// Used when the project's ExecServerClient is unavailable (or with --raw-client) so the
// harness can still measure both servers with one and the same client code.
import { pathToFileURL } from 'node:url';
import { RpcConnection } from '../src/rpc/connection';
import type { NotificationMessage } from '../src/rpc/messages';
import type { FsReadBlockResult, FsReadFileResult, FsWalkOptions, FsWalkResult } from '../src/protocol/types';
import type { BenchClient } from './bench-client';
import { BenchWsTransport } from './ws-transport';

const uri = (p: string) => pathToFileURL(p).href;
/** Largest block fs/readBlock accepts (1 MiB). */
const BLOCK = 1024 * 1024;

interface ProcWatch {
  onData?: (chunk: Uint8Array) => void;
  exitCode?: number;
  onExit?: (code: number) => void;
  onClosed?: () => void;
}

export class RawBenchClient implements BenchClient {
  readonly kind = 'raw RpcConnection';
  private readonly procs = new Map<string, ProcWatch>();
  private nextProc = 1;
  private nextHandle = 1;

  private constructor(private readonly rpc: RpcConnection) {
    rpc.onNotification((n) => this.onNotification(n));
  }

  static async connect(url: string): Promise<RawBenchClient> {
    const rpc = new RpcConnection(await BenchWsTransport.connect(url));
    await rpc.request('initialize', { clientName: 'exec-server-bench' }, { timeoutMs: 10_000 });
    rpc.notify('initialized', {});
    return new RawBenchClient(rpc);
  }

  async stat(path: string): Promise<void> {
    await this.rpc.request('fs/getMetadata', { path: uri(path) });
  }

  async statPipelined(path: string, count: number, onAnswer?: () => void): Promise<void> {
    const p = uri(path);
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < count; i++) all.push(this.rpc.request('fs/getMetadata', { path: p }).then(onAnswer));
    await Promise.all(all);
  }

  runToExit(argv: string[], cwd: string): Promise<number> {
    const processId = `b${this.nextProc++}`;
    return new Promise<number>((resolve, reject) => {
      this.procs.set(processId, { onExit: resolve, onClosed: () => this.procs.delete(processId) });
      this.rpc
        .request('process/start', { processId, argv, cwd: uri(cwd), env: {}, tty: false, arg0: null })
        .catch(reject);
    });
  }

  runCollect(argv: string[], cwd: string, onData: (chunk: Uint8Array) => void): Promise<number> {
    const processId = `b${this.nextProc++}`;
    return new Promise<number>((resolve, reject) => {
      const w: ProcWatch = {
        onData,
        onClosed: () => {
          this.procs.delete(processId);
          resolve(w.exitCode ?? -1);
        },
      };
      this.procs.set(processId, w);
      this.rpc
        .request('process/start', { processId, argv, cwd: uri(cwd), env: {}, tty: false, arg0: null })
        .catch(reject);
    });
  }

  async readFile(path: string): Promise<Uint8Array> {
    const r = await this.rpc.request<FsReadFileResult>('fs/readFile', { path: uri(path) });
    return Buffer.from(r.dataBase64, 'base64');
  }

  async writeFile(path: string, data: Uint8Array, streamed: boolean): Promise<void> {
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.length);
    if (!streamed) {
      await this.rpc.request('fs/writeFile', { path: uri(path), dataBase64: bytes.toString('base64') });
      return;
    }
    const handleId = `h${this.nextHandle++}`;
    await this.rpc.request('fs/open', { handleId, path: uri(path), mode: 'replace' });
    const inFlight: Promise<unknown>[] = [];
    try {
      for (let offset = 0; offset < bytes.length; offset += BLOCK) {
        const p = this.rpc.request('fs/writeBlock', { handleId, offset, chunk: bytes.subarray(offset, offset + BLOCK).toString('base64') });
        p.catch(() => undefined);
        inFlight.push(p);
        if (inFlight.length >= 4) await inFlight.shift();
      }
      await Promise.all(inFlight);
    } finally {
      await this.rpc.request('fs/close', { handleId }).catch(() => undefined);
    }
  }

  async readStream(path: string, onData: (chunk: Uint8Array) => void): Promise<void> {
    const handleId = `h${this.nextHandle++}`;
    await this.rpc.request('fs/open', { handleId, path: uri(path) });
    try {
      // Two blocks in flight: the server reads the next block while we decode this one.
      let offset = 0;
      let next = this.rpc.request<FsReadBlockResult>('fs/readBlock', { handleId, offset, len: BLOCK });
      for (;;) {
        const r = await next;
        const data = Buffer.from(r.chunk as string, 'base64'); // JSON connection: base64 (bytes only with binaryOutput)
        offset += data.length;
        if (!r.eof && data.length > 0) {
          next = this.rpc.request<FsReadBlockResult>('fs/readBlock', { handleId, offset, len: BLOCK });
        }
        if (data.length) onData(data);
        if (r.eof || data.length === 0) break;
      }
    } finally {
      await this.rpc.request('fs/close', { handleId }).catch(() => undefined);
    }
  }

  async walk(path: string, options: FsWalkOptions): Promise<number> {
    const r = await this.rpc.request<FsWalkResult>('fs/walk', { path: uri(path), options });
    return r.entries.length;
  }

  async close(): Promise<void> {
    this.rpc.close('bench done');
  }

  private onNotification(n: NotificationMessage): void {
    const p = n.params as { processId?: string; chunk?: string; exitCode?: number } | undefined;
    const w = p?.processId === undefined ? undefined : this.procs.get(p.processId);
    if (!w || !p) return;
    // Notifications of one process arrive in seq order on one socket, so no reordering here.
    if (n.method === 'process/output') w.onData?.(Buffer.from(p.chunk ?? '', 'base64'));
    else if (n.method === 'process/exited') {
      w.exitCode = p.exitCode;
      w.onExit?.(p.exitCode ?? -1);
    } else if (n.method === 'process/closed') w.onClosed?.();
  }
}
