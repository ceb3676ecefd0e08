// A raw websocket JSON-RPC client whose reading can be stopped (ws.pause(): the TCP socket is
// no longer read, so the server's send buffer fills) and that accounts for every process
// event it receives: output bytes per process, seq contiguity, exit and close.
import * as fs from 'node:fs';
import WebSocket from 'ws';

export interface StreamStats {
  /** Decoded output bytes received so far. */
  bytes: number;
  /** Next seq expected (output, exited and closed share one counter starting at 1). */
  nextSeq: number;
  /** Seq gaps/duplicates seen ("expected 7, got 9"); must stay empty. */
  seqErrors: string[];
  exitCode: number | undefined;
  closed: boolean;
}

export class StallClient {
  private nextId = 1;
  private readonly pending = new Map<number, (msg: Record<string, unknown>) => void>();
  readonly streams = new Map<string, StreamStats>();
  readonly closedPromise: Promise<void>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.onFrame(data.toString()));
    this.closedPromise = new Promise((resolve) => ws.once('close', () => resolve()));
  }

  static connect(url: string): Promise<StallClient> {
    return new Promise((resolve, reject) => {
      // The test reads hundreds of MB: allow large frames, no compression.
      const ws = new WebSocket(url, { handshakeTimeout: 15_000, perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
      ws.once('open', () => resolve(new StallClient(ws)));
      ws.once('error', reject);
    });
  }

  stats(processId: string): StreamStats {
    let s = this.streams.get(processId);
    if (!s) {
      s = { bytes: 0, nextSeq: 1, seqErrors: [], exitCode: undefined, closed: false };
      this.streams.set(processId, s);
    }
    return s;
  }

  private checkSeq(s: StreamStats, seq: unknown): void {
    if (seq !== s.nextSeq) s.seqErrors.push(`expected ${s.nextSeq}, got ${String(seq)}`);
    if (typeof seq === 'number') s.nextSeq = seq + 1;
  }

  private onFrame(text: string): void {
    const msg = JSON.parse(text) as { id?: number; method?: string; params?: Record<string, unknown> };
    if (msg.method === undefined && msg.id !== undefined) {
      const cb = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      cb?.(msg as Record<string, unknown>);
      return;
    }
    const p = msg.params ?? {};
    if (typeof p.processId !== 'string') return;
    const s = this.stats(p.processId);
    if (msg.method === 'process/output') {
      this.checkSeq(s, p.seq);
      // Decoded length without materialising the bytes (the test moves up to 1 GiB).
      s.bytes += Buffer.byteLength(p.chunk as string, 'base64');
    } else if (msg.method === 'process/exited') {
      this.checkSeq(s, p.seq);
      s.exitCode = p.exitCode as number;
    } else if (msg.method === 'process/closed') {
      this.checkSeq(s, p.seq);
      s.closed = true;
    }
  }

  call(method: string, params: unknown): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  async init(): Promise<void> {
    const r = await this.call('initialize', { clientName: 'stall-test' });
    if (!r.result) throw new Error(`initialize failed: ${JSON.stringify(r)}`);
    this.ws.send(JSON.stringify({ method: 'initialized', params: {} }));
  }

  /** Stop reading the socket: the server's writes pile up in its own buffers. */
  stall(): void {
    this.ws.pause();
  }
  unstall(): void {
    this.ws.resume();
  }
}

// ------------------------------------------------------------ /proc helpers (Linux)

/** Resident set size of `pid` in bytes (VmRSS), or undefined if it is gone. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
