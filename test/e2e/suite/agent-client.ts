// A raw WebSocket JSON-RPC client playing the external agent: it speaks the exec-server wire
// protocol directly (no project client code), so the endpoint is tested as an outsider sees it.
import WebSocket from 'ws';

export class AgentClient {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      let msg: { id?: number; result?: unknown; error?: { code: number; message: string } };
      try {
        msg = JSON.parse(String(data));
      } catch {
        return;
      }
      if (typeof msg.id !== 'number') return; // notifications (process/output, ...) are not needed here
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(Object.assign(new Error(`${msg.error.code}: ${msg.error.message}`), { code: msg.error.code }));
      else p.resolve(msg.result);
    });
    ws.on('close', () => {
      for (const p of this.pending.values()) p.reject(new Error('agent connection closed'));
      this.pending.clear();
    });
  }

  /** Opens the socket (Authorization: Bearer <token> when given); rejects with the HTTP status on refusal. */
  static open(url: string, token?: string): Promise<AgentClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers: token ? { Authorization: `Bearer ${token}` } : {}, handshakeTimeout: 10_000 });
      ws.once('open', () => resolve(new AgentClient(ws)));
      ws.once('unexpected-response', (_req, res) => {
        reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode }));
        ws.terminate();
      });
      ws.once('error', (err) => reject(err));
    });
  }

  /** Opens and completes the initialize / initialized handshake. */
  static async connect(url: string, token: string): Promise<AgentClient> {
    const c = await AgentClient.open(url, token);
    await c.request('initialize', { clientName: 'e2e-agent' });
    c.notify('initialized', {});
    return c;
  }

  request(method: string, params: unknown): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  notify(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ method, params }));
  }

  close(): void {
    this.ws.close();
  }
}
