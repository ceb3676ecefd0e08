// A raw JSON-RPC client over a websocket, for tests that look at frames as sent: every frame
// it receives is kept, and server → client requests (network/policyRequest) go to `onRequest`.
import WebSocket from 'ws';
import { waitFor } from './wait';

export class RawRpcClient {
  readonly frames: any[] = [];
  onRequest: (msg: any) => void = () => {};
  private nextId = 1000;
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const msg = JSON.parse(String(d));
      this.frames.push(msg);
      if (msg.method !== undefined && msg.id !== undefined) this.onRequest(msg);
    });
  }
  /** Connected, `initialize` answered and `initialized` sent. */
  static async open(url: string, headers: Record<string, string> = {}): Promise<RawRpcClient> {
    const ws = new WebSocket(url, { headers });
    await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
    const c = new RawRpcClient(ws);
    await c.call('initialize', { clientName: 'raw-rpc-test' });
    c.send({ method: 'initialized', params: {} });
    return c;
  }
  send(msg: unknown): void {
    this.ws.send(JSON.stringify(msg));
  }
  async call(method: string, params: unknown, timeout = 30_000): Promise<any> {
    const id = this.nextId++;
    this.send({ id, method, params });
    const r = await waitFor(() => this.frames.find((f) => f.id === id && f.method === undefined), { what: `answer to ${method}`, timeout });
    if (r.error) throw Object.assign(new Error(r.error.message), { code: r.error.code });
    return r.result;
  }
  /** The server's network/policyRequest frames so far. */
  questions(): any[] {
    return this.frames.filter((f) => f.method === 'network/policyRequest');
  }
  decisions(processId: string): any[] {
    return this.frames.filter((f) => f.method === 'network/policyDecision' && f.params.processId === processId).map((f) => f.params);
  }
  closedProcess(processId: string, timeout = 60_000): Promise<unknown> {
    return waitFor(() => this.frames.some((f) => f.method === 'process/closed' && f.params.processId === processId), { what: `${processId} closed`, timeout });
  }
  close(): Promise<void> {
    return new Promise((r) => {
      if (this.ws.readyState === WebSocket.CLOSED) return r();
      this.ws.once('close', () => r());
      this.ws.close();
    });
  }
}
