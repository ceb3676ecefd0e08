// Starts the two servers under test as child processes listening on ws://127.0.0.1:0 and
// reads the URL each prints on stdout. Both get the same treatment: own process, own port.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';

export interface ServerUnderTest {
  readonly name: ServerCommand['name'];
  readonly url: string;
  readonly pid: number;
  /** The first 8 KiB of its stderr (logs). */
  stderr(): string;
  stop(): Promise<void>;
}

export interface ServerCommand {
  name: 'ours' | 'reference' | 'bareWs';
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

/** Our CLI, optionally under extra node flags (e.g. --cpu-prof). */
export function oursCommand(repo: string, nodeFlags: string[] = [], cliPath?: string, extraArgs: string[] = []): ServerCommand {
  // cliPath: an experimental build to compare (e.g. a patched copy), default dist/cli.js.
  const cli = cliPath ?? path.join(repo, 'dist', 'cli.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build`);
  return { name: 'ours', command: process.execPath, args: [...nodeFlags, cli, '--listen', 'ws://127.0.0.1:0', ...extraArgs], env: process.env };
}

/** bench/bare-ws-server.mjs: the plain-`ws` ceiling of the stream scenario (no protocol). */
export function bareWsCommand(repo: string): ServerCommand {
  return { name: 'bareWs', command: process.execPath, args: [path.join(repo, 'bench', 'bare-ws-server.mjs')], env: process.env };
}

/** The reference binary, installed into the cache by scripts/install-reference.sh when missing. */
export function referenceCommand(repo: string): ServerCommand {
  const r = spawnSync('bash', [path.join(repo, 'scripts', 'install-reference.sh')], { encoding: 'utf8', timeout: 300_000 });
  const bin = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !bin) throw new Error(`scripts/install-reference.sh failed (exit ${r.status ?? r.signal}): ${r.stderr.trim() || "no output"}`);
  // <cache>/reference-<v>/node_modules/... → CODEX_HOME=<cache>/reference-<v>/home
  const home = path.join(bin.replace(/\/node_modules\/.*$/, ''), 'home');
  mkdirSync(home, { recursive: true });
  return { name: 'reference', command: bin, args: ['exec-server', '--listen', 'ws://127.0.0.1:0'], env: { ...process.env, CODEX_HOME: home } };
}

export function startServer(cmd: ServerCommand, timeoutMs = 20_000): Promise<ServerUnderTest> {
  const child = spawn(cmd.command, cmd.args, { env: cmd.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    if (stderr.length < 8192) stderr += d;
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd.name}: no ws:// URL on stdout within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      out += d;
      const m = /ws:\/\/127\.0\.0\.1:\d+/.exec(out);
      if (m) {
        clearTimeout(timer);
        console.log(`  started ${cmd.name} (pid ${child.pid}) at ${m[0]}`);
        resolve({ name: cmd.name, url: m[0], pid: child.pid!, stderr: () => stderr, stop: () => stopChild(child) });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${cmd.name} exited early (${code ?? signal}); stderr: ${stderr}`));
    });
  });
}

/** SIGTERM, then SIGKILL after 3 s; resolves when the process is gone. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
