// A tiny MessageTransport over the `ws` package, used by the benchmark's minimal client.
// It exists so the harness can measure any server (ours or the reference) with code that
// depends only on src/rpc — the project's real client is measured through bench/targets.ts.
import WebSocket from 'ws';
import { Emitter } from '../src/rpc/event';
import type { CloseInfo, MessageTransport } from '../src/rpc/transport';

/** Large enough for a 100 MiB file as one base64 fs/readFile response (ws defaults to 100 MiB). */
export const BENCH_MAX_PAYLOAD = 512 * 1024 * 1024;

export class BenchWsTransport implements MessageTransport {
  private readonly messageEmitter = new Emitter<unknown>();
  private readonly parseErrorEmitter = new Emitter<string>();
  private readonly closeEmitter = new Emitter<CloseInfo>();
  private closedLocally = false;
  closed = false;
  readonly onMessage = this.messageEmitter.event;
  readonly onParseError = this.parseErrorEmitter.event;
  readonly onClose = this.closeEmitter.event;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: WebSocket.RawData) => {
      const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : data.toString();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (e) {
        this.parseErrorEmitter.fire(String(e));
        return;
      }
      this.messageEmitter.fire(parsed);
    });
    ws.on('close', (code: number, reason: Buffer) => this.finish(`websocket closed (${code} ${reason.toString()})`));
    ws.on('error', (e: Error) => this.finish(`websocket error: ${e.message}`));
  }

  static connect(url: string, timeoutMs = 10_000): Promise<BenchWsTransport> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { maxPayload: BENCH_MAX_PAYLOAD, perMessageDeflate: false });
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error(`connect to ${url} timed out`));
      }, timeoutMs);
      ws.once('open', () => {
        clearTimeout(timer);
        resolve(new BenchWsTransport(ws));
      });
      ws.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  send(message: object): void {
    if (!this.closed) this.ws.send(JSON.stringify(message));
  }

  close(reason = 'closed locally'): void {
    if (this.closed) return;
    this.closedLocally = true;
    // terminate, not close: a stalled peer must not keep the bench waiting for a close handshake.
    this.ws.terminate();
    this.finish(reason);
  }

  dispose(): void {
    this.close();
  }

  private finish(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.closeEmitter.fire({ reason, local: this.closedLocally });
  }
}
