// A bench's client of one exec-server over stdio (ours as `node dist/cli.js --listen stdio`, or
// the reference's `codex exec-server --listen stdio`): JSON lines, one request at a time per
// caller, each process's output gathered as text until its process/closed.
import { spawn } from 'node:child_process';

export class StdioServer {
  /** `cmd`: argv of the server; `env`: its environment (default: this process's). */
  constructor(cmd, env = process.env) {
    this.child = spawn(cmd[0], cmd.slice(1), { env, stdio: ['pipe', 'pipe', 'ignore'] });
    this.buf = '';
    this.pending = new Map();
    this.out = new Map();
    this.closed = new Map();
    this.id = 0;
    this.child.stdout.on('data', (d) => {
      this.buf += d;
      let nl;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const m = JSON.parse(this.buf.slice(0, nl));
        this.buf = this.buf.slice(nl + 1);
        if (m.id !== undefined && this.pending.has(m.id)) {
          this.pending.get(m.id)(m);
          this.pending.delete(m.id);
        } else if (m.method === 'process/output') {
          this.out.set(m.params.processId, (this.out.get(m.params.processId) ?? '') + Buffer.from(m.params.chunk, 'base64'));
        } else if (m.method === 'process/closed') this.closed.get(m.params.processId)?.();
      }
    });
  }
  call(method, params) {
    return new Promise((r) => {
      const i = ++this.id;
      this.pending.set(i, r);
      this.child.stdin.write(JSON.stringify({ id: i, method, params }) + '\n');
    });
  }
  async init(clientName) {
    await this.call('initialize', { clientName });
    this.child.stdin.write(JSON.stringify({ method: 'initialized', params: {} }) + '\n');
  }
  /** Starts a process and waits for its process/closed: its output, and ms from the request to the close. */
  async run(params) {
    const t0 = performance.now();
    const done = new Promise((r) => this.closed.set(params.processId, r));
    const res = await this.call('process/start', params);
    if (res.error) throw new Error(JSON.stringify(res.error));
    await done;
    return { out: this.out.get(params.processId) ?? '', ms: performance.now() - t0 };
  }
  stop() {
    this.child.stdin.end();
  }
}
