// Descriptor inheritance as a sandbox escape: a descriptor the server's process inherited
// without close-on-exec (a parent that leaked one; a directory fd in particular) would reach
// every child. Inside a mount namespace a directory fd still points at the host's mount, so
// /proc/self/fd/N/<name> reads and writes outside every root the sandbox allows. Two hosts are
// started with a directory fd at a high number (Node marks only its lowest inherited fds
// close-on-exec at startup; 40 stays inheritable):
// - an embedding process that runs the engine in-process and closes nothing (as the VS Code
//   extension host does): sandboxed children (pipes and PTY) try to use the fd;
// - the built CLI, which closes such descriptors at startup: unsandboxed children do not get it.
// Run `npm run build` first.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { cliPath } from '../support/reference';
import { tmpDir, uri } from '../support/server';

if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` before this test`);

const LEAKED_FD = 40;

/** The engine served over stdio inside a plain Node process that closes no descriptor. */
const EMBEDDED = `
const { ExecServer } = require(${JSON.stringify(path.resolve(__dirname, '../../src/server/exec-server.js'))});
const { serveConnection } = require(${JSON.stringify(path.resolve(__dirname, '../../src/transports/serve.js'))});
const { StdioTransport } = require(${JSON.stringify(path.resolve(__dirname, '../../src/transports/stdio.js'))});
const server = new ExecServer({ log: () => {} });
const served = serveConnection(server, new StdioTransport(process.stdin, process.stdout), { terminateOnClose: true });
served.closed.then(() => server.shutdown()).then(() => process.exit(0));
`;

/** A JSON-lines client of a stdio server (the CLI or EMBEDDED) started with `extraFd` at LEAKED_FD. */
class StdioServer {
  private buf = '';
  private nextId = 1;
  private readonly waiting = new Map<number, (m: { result?: any; error?: { message: string } }) => void>();
  readonly child: ChildProcess;
  stderr = '';

  constructor(args: string[], extraFd: number) {
    const stdio: (string | number)[] = ['pipe', 'pipe', 'pipe'];
    while (stdio.length < LEAKED_FD) stdio.push('ignore');
    stdio.push(extraFd);
    this.child = spawn(process.execPath, args, { stdio: stdio as never, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    this.child.stdout!.on('data', (d: Buffer) => {
      this.buf += d.toString();
      let nl;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const m = JSON.parse(this.buf.slice(0, nl));
        this.buf = this.buf.slice(nl + 1);
        if (m.id !== undefined) this.waiting.get(m.id)?.(m);
      }
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
  }

  call(method: string, params: unknown): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, (m) => (m.error ? reject(new Error(`${method}: ${m.error.message}`)) : resolve(m.result)));
      this.child.stdin!.write(JSON.stringify({ id, method, params }) + '\n');
    });
  }

  notify(method: string, params: unknown): void {
    this.child.stdin!.write(JSON.stringify({ method, params }) + '\n');
  }

  /** Starts a process and returns all its output once it closed. */
  async run(processId: string, argv: string[], cwd: string, extra: Record<string, unknown> = {}): Promise<string> {
    await this.call('process/start', { processId, argv, cwd: uri(cwd), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, tty: false, ...extra });
    let out = '';
    let after = 0;
    for (let i = 0; i < 100; i++) {
      const r = await this.call('process/read', { processId, afterSeq: after, waitMs: 200 });
      for (const c of r.chunks) {
        out += Buffer.from(c.chunk, 'base64').toString();
        after = c.seq;
      }
      if (r.closed) return out;
    }
    throw new Error(`${processId} did not close; output so far: ${out}`);
  }

  async stop(): Promise<void> {
    this.child.stdin!.end();
    if (this.child.exitCode === null) await new Promise((r) => this.child.once('close', r));
  }
}

let work: string;
let secretDir: string;
let embedded: StdioServer;
let cli: StdioServer;

before(async () => {
  work = tmpDir();
  secretDir = tmpDir();
  fs.writeFileSync(path.join(secretDir, 'secret'), 'SECRET-OUTSIDE-EVERY-ROOT');
  const dirFd = fs.openSync(secretDir, 'r');
  embedded = new StdioServer(['-e', EMBEDDED], dirFd);
  cli = new StdioServer([cliPath, '--listen', 'stdio'], dirFd);
  fs.closeSync(dirFd);
  for (const s of [embedded, cli]) {
    await s.call('initialize', { clientName: 'fd-test' });
    s.notify('initialized', {});
  }
});
after(async () => {
  await Promise.all([embedded.stop(), cli.stop()]);
  for (const d of [work, secretDir]) fs.rmSync(d, { recursive: true, force: true });
});

/** Read-only everywhere except `work`; the secret directory is hidden (`none`). */
function sandbox() {
  return {
    permissions: {
      type: 'managed',
      file_system: {
        type: 'restricted',
        entries: [
          { path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
          { path: { type: 'path', path: uri(work) }, access: 'write' },
          { path: { type: 'path', path: uri(secretDir) }, access: 'none' },
        ],
      },
      network: 'restricted',
    },
    cwd: uri(work),
    workspaceRoots: [uri(work)],
    windowsSandboxLevel: 'disabled',
  };
}

const ATTACK = [
  `ls /proc/self/fd/ | tr '\\n' ' '; echo`,
  `cat /proc/self/fd/${LEAKED_FD}/secret`,
  `echo pwned > /proc/self/fd/${LEAKED_FD}/escaped`,
  `ls /proc/self/fd/${LEAKED_FD}/..`,
  'true',
].join('; ');

test('the embedding process really holds the inherited directory fd, inheritable (the attack is set up)', () => {
  assert.equal(fs.readlinkSync(`/proc/${embedded.child.pid}/fd/${LEAKED_FD}`), secretDir);
  const flags = /^flags:\s*([0-7]+)$/m.exec(fs.readFileSync(`/proc/${embedded.child.pid}/fdinfo/${LEAKED_FD}`, 'utf8'))!;
  assert.equal(parseInt(flags[1], 8) & 0o2000000, 0, 'not close-on-exec');
});

test('a PTY process runs meanwhile: its master (node-pty opens it without close-on-exec) is one more descriptor a child could inherit', async () => {
  await embedded.call('process/start', { processId: 'bg-pty', argv: ['/bin/sleep', '60'], cwd: uri(work), env: {}, tty: true });
  const fds = fs.readdirSync(`/proc/${embedded.child.pid}/fd`).map((fd) => {
    try {
      return fs.readlinkSync(`/proc/${embedded.child.pid}/fd/${fd}`);
    } catch {
      return '';
    }
  });
  assert.ok(fds.includes('/dev/ptmx'), fds.join(' '));
});

for (const tty of [false, true]) {
  test(`sandboxed ${tty ? 'PTY' : 'pipe'} child of an embedded engine: an fd its host inherited is closed before the command runs (no read or write outside its roots)`, async () => {
    const out = await embedded.run(`sbx-${tty}`, ['/bin/bash', '-c', ATTACK], work, { tty, sandbox: sandbox() });
    assert.doesNotMatch(out, /SECRET-OUTSIDE-EVERY-ROOT/, out);
    assert.equal(fs.existsSync(path.join(secretDir, 'escaped')), false, 'nothing written through the leaked fd');
    const fds = out.split(/\r?\n/)[0].trim().split(/\s+/).map(Number);
    // 0, 1, 2 and the one ls opens to list the directory.
    assert.equal(fds.includes(LEAKED_FD), false, `fds in the sandbox: ${fds.join(' ')}`);
    assert.ok(fds.length <= 4, `only 0, 1, 2 (+ ls's own; no PTY master of bg-pty): ${fds.join(' ')}`);
  });
}

test('the CLI closed the inheritable descriptor it was started with', () => {
  assert.equal(fs.existsSync(`/proc/${cli.child.pid}/fd/${LEAKED_FD}`), false);
});

for (const tty of [false, true]) {
  test(`unsandboxed ${tty ? 'PTY' : 'pipe'} child of the CLI: an fd the CLI inherited does not reach it`, async () => {
    const out = await cli.run(`plain-${tty}`, ['/bin/bash', '-c', `ls /proc/self/fd/ | tr '\\n' ' '; echo`], work, { tty });
    const fds = out.trim().split(/\s+/).map(Number);
    assert.equal(fds.includes(LEAKED_FD), false, `fds of the child: ${fds.join(' ')}`);
  });
}
