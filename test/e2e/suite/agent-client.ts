// A raw WebSocket JSON-RPC client playing the external agent: it speaks the exec-server wire
// protocol directly (no project client code), so the endpoint is tested as an outsider sees it.
// The security tests use it the way an attacker holding the token would: requests sent back to
// back without waiting (pipelined), several connections at once, a client that never reads.
import WebSocket from 'ws';

export interface Notification {
  method: string;
  params: any;
}

export interface OpenOptions {
  /** Largest message the client accepts (ws closes the socket with 1009 beyond it). Default 100 MiB (ws's own). */
  maxPayload?: number;
}

export class AgentClient {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  /** Every notification received, in order. */
  readonly notifications: Notification[] = [];
  private readonly notificationWaiters = new Set<() => void>();
  /** Set once the socket closed (code and reason). */
  closed: { code: number; reason: string } | undefined;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      let msg: { id?: number; method?: string; params?: unknown; result?: unknown; error?: { code: number; message: string } };
      try {
        msg = JSON.parse(String(data));
      } catch {
        return;
      }
      if (typeof msg.id !== 'number') {
        if (typeof msg.method === 'string') {
          this.notifications.push({ method: msg.method, params: msg.params });
          for (const w of [...this.notificationWaiters]) w();
        }
        return;
      }
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(Object.assign(new Error(`${msg.error.code}: ${msg.error.message}`), { code: msg.error.code }));
      else p.resolve(msg.result);
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: String(reason) };
      for (const p of this.pending.values()) p.reject(Object.assign(new Error(`agent connection closed (${code} ${String(reason)})`), { closed: true }));
      this.pending.clear();
      for (const w of [...this.notificationWaiters]) w();
    });
    ws.on('error', () => {}); // 'close' follows and rejects what is pending
  }

  /** Opens the socket (Authorization: Bearer <token> when given); rejects with the HTTP status on refusal. */
  static open(url: string, token?: string, opts: OpenOptions = {}): Promise<AgentClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, {
        headers: token ? { Authorization: `Bearer ${token}` } : {},
        handshakeTimeout: 10_000,
        ...(opts.maxPayload !== undefined ? { maxPayload: opts.maxPayload } : {}),
      });
      ws.once('open', () => resolve(new AgentClient(ws)));
      ws.once('unexpected-response', (_req, res) => {
        reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode }));
        ws.terminate();
      });
      ws.once('error', (err) => reject(err));
    });
  }

  /** Opens and completes the initialize / initialized handshake. */
  static async connect(url: string, token: string, opts: OpenOptions = {}): Promise<AgentClient> {
    const c = await AgentClient.open(url, token, opts);
    await c.request('initialize', { clientName: 'e2e-agent' });
    c.notify('initialized', {});
    return c;
  }

  /** Sends a request; the promise settles with its answer. Nothing is awaited before sending. */
  request(method: string, params: unknown): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(Object.assign(new Error('agent connection closed'), { closed: true }));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** request() that never rejects: the result, or the Error. */
  settle(method: string, params: unknown): Promise<{ ok: true; result: any } | { ok: false; error: Error & { code?: number; closed?: boolean } }> {
    return this.request(method, params).then((result) => ({ ok: true as const, result }), (error: Error) => ({ ok: false as const, error }));
  }

  notify(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ method, params }));
  }

  /** Resolves with the first notification (already received or later) that `match` accepts. */
  waitForNotification(what: string, match: (n: Notification) => boolean, timeoutMs = 20_000): Promise<Notification> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const n = this.notifications.find(match);
        if (n) {
          done();
          resolve(n);
        } else if (this.closed) {
          done();
          reject(new Error(`connection closed while waiting for ${what}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.notificationWaiters.delete(check);
      };
      this.notificationWaiters.add(check);
      check();
    });
  }

  /** Waits for process/closed of `processId` (all output delivered); resolves with its exit code. */
  async waitForExit(processId: string, timeoutMs = 20_000): Promise<number> {
    await this.waitForNotification(`process/closed of ${processId}`, (n) => n.method === 'process/closed' && n.params?.processId === processId, timeoutMs);
    const exited = this.notifications.find((n) => n.method === 'process/exited' && n.params?.processId === processId);
    return exited?.params?.exitCode;
  }

  /** Stops reading from the socket (the server's answers pile up on its side): a slow client. */
  pause(): void {
    this.ws.pause();
  }

  resume(): void {
    this.ws.resume();
  }

  close(): void {
    this.ws.close();
  }

  terminate(): void {
    this.ws.terminate();
  }
}
