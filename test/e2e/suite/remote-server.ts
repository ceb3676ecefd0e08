// Starts the project's own CLI (`node dist/cli.js --listen ws://127.0.0.1:PORT`, with a capability
// token) as the remote exec-server the extension connects to. The suite owns these processes: every server it starts
// is stopped by the suite's cleanup even when a test fails half-way.
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { config } from './config';
import { afterAll } from './framework';

const live = new Set<RemoteServer>();
afterAll(async () => {
  await Promise.all([...live].map((s) => s.stop()));
});

export class RemoteServer {
  private child: ChildProcess | undefined;
  private stderr = '';
  url = '';
  port = 0;
  /** Capability token the server requires (the same across restarts). */
  readonly token = randomBytes(24).toString('hex');
  private readonly id = randomBytes(6).toString('hex');

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the CLI on `port` (0 = any free port) and resolves with its ws:// URL once it prints it. */
  async start(port = 0): Promise<string> {
    if (this.child) throw new Error('remote server already running');
    const { repo, nodePath } = config();
    const cli = path.join(repo, 'dist', 'cli.js');
    // One file per server (not per extension host): a server reads it at startup, so servers
    // started close together must not overwrite each other's token.
    const tokenFile = path.join(config().workDir, `remote-token-${this.id}`);
    writeFileSync(tokenFile, this.token, { mode: 0o600 });
    const args = [cli, '--listen', `ws://127.0.0.1:${port}`, '--ws-auth', 'capability-token', '--ws-token-file', tokenFile];
    const child = spawn(nodePath, args, {
      cwd: repo,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    live.add(this);
    this.stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      this.stderr = (this.stderr + d).slice(-4000);
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error('no ws:// URL printed within 20 s')), 20_000);
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(new Error(`remote exec-server (${cli}) did not start: ${err.message}\nstderr: ${this.stderr}`));
      };
      child.on('error', fail);
      child.on('exit', (code, signal) => fail(new Error(`exited early (code ${code}, signal ${signal})`)));
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const m = /ws:\/\/127\.0\.0\.1:(\d+)\S*/.exec(out);
        if (m) {
          clearTimeout(timer);
          this.port = Number(m[1]);
          resolve(m[0]);
        }
      });
    });
    child.removeAllListeners('exit');
    child.removeAllListeners('error');
    this.url = url;
    return url;
  }

  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    live.delete(this);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
