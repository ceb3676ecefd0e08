// The one launcher for server processes in tests: our built CLI (`node dist/cli.js --listen
// ws://127.0.0.1:0`) or any command that prints its bound ws:// URL on stdout (the reference
// codex). It waits for that URL line, and every started process is stopped when its test ends
// (given `t`), by `stopAll()` (an `after` hook), and at the latest SIGKILLed when the test
// file's process exits — so no server outlives its test file.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestContext } from 'node:test';
import type { ExecServerClient } from '../../src/client/client';
import { isAlive } from './process';
import { waitFor } from './wait';

export const repoRoot = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
/** The bundle `npm run build` writes (npm test builds it first: `pretest`). */
export const cliPath = path.join(repoRoot, 'dist/cli.js');

export interface ServerProcess {
  /** The ws:// (or wss://) URL the server printed once listening. */
  url: string;
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process has exited. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Stop the server when this test ends. */
  t?: TestContext;
  /** Give up (and kill it) when no URL line came within this many ms (default 30 s). */
  timeoutMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Run as another user (needs root), e.g. nobody for permission tests. */
  user?: { uid: number; gid: number };
  /** Name in error messages (default: the command's base name). */
  name?: string;
  /** Its standard input: /dev/null (default) or a pipe (child.stdin, e.g. for --exit-on-stdin-close). */
  stdin?: 'ignore' | 'pipe';
}

const running = new Set<ServerProcess>();
let exitHooked = false;

/** Stops every server started by this file that is still running (use in `after`). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((s) => s.stop()));
}

/**
 * Starts `command args…`, resolves when a line on stdout is a ws:// or wss:// URL; rejects with
 * the stderr seen so far if the process exits first or the URL does not come in time.
 */
export function startServerProcess(command: string, args: string[], opts: StartOptions = {}): Promise<ServerProcess> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const name = opts.name ?? path.basename(command);
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const s of running) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    });
  }
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: [opts.stdin ?? 'ignore', 'pipe', 'pipe'], cwd: opts.cwd, env: opts.env ?? process.env, ...opts.user });
    let out = '';
    let err = '';
    let exited: Promise<void> | undefined;
    const server: ServerProcess = {
      url: '',
      child,
      pid: child.pid ?? -1,
      stdout: () => out,
      stderr: () => err,
      stop: () =>
        (exited ??= new Promise<void>((res) => {
          if (child.exitCode !== null || child.signalCode !== null) return res();
          const k = setTimeout(() => child.kill('SIGKILL'), 5000);
          child.once('exit', () => {
            clearTimeout(k);
            res();
          });
          child.kill('SIGTERM');
        }).then(() => void running.delete(server))),
    };
    running.add(server);
    child.once('exit', () => running.delete(server));
    opts.t?.after(() => server.stop());
    child.stderr!.on('data', (d) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not print its URL in ${timeoutMs} ms; stderr: ${err}`));
    }, timeoutMs);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /^(wss?:\/\/\S+)\s*$/m.exec(out);
      if (m && !server.url) {
        clearTimeout(timer);
        server.url = m[1];
        resolve(server);
      }
    });
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`${name} could not be started: ${e.message}`));
    });
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      if (!server.url) reject(new Error(`${name} exited (${code ?? sig}) before printing its URL; stderr: ${err}`));
    });
  });
}

/**
 * Starts our CLI: `node [nodeArgs] dist/cli.js args…`, listening on ws://127.0.0.1:0 unless
 * `args` has its own `--listen`.
 */
export function startCli(args: string[] = [], opts: StartOptions & { nodeArgs?: string[] } = {}): Promise<ServerProcess> {
  const listen = args.includes('--listen') ? [] : ['--listen', 'ws://127.0.0.1:0'];
  return startServerProcess(process.execPath, [...(opts.nodeArgs ?? []), cliPath, ...listen, ...args], { name: 'exec-server CLI', ...opts });
}

/** The exit code (or signal) of `child`, once it has exited. */
export const exitOf = (child: ChildProcess) =>
  new Promise<number | string | null>((r) => (child.exitCode !== null || child.signalCode !== null ? r(child.exitCode ?? child.signalCode) : child.once('exit', (code, sig) => r(code ?? sig))));

/** Runs `echo <word>` through `client` (in the temp dir, PATH only) to its end: exit code and output. */
export async function echoThrough(client: ExecServerClient, word: string): Promise<{ code: number; out: string }> {
  const h = await client.startProcess({ argv: ['echo', word], cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  let out = '';
  h.onOutput((e) => (out += Buffer.from(e.data).toString()));
  const code = await h.exited;
  await h.closed;
  return { code, out };
}

/** Starts `echo $$; exec sleep 300` through `client` and returns the OS pid of the sleeping child. */
export async function startSleeper(client: ExecServerClient): Promise<number> {
  const h = await client.startProcess({ argv: ['sh', '-c', 'echo $$; exec sleep 300'], cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  let out = '';
  h.onOutput((e) => (out += Buffer.from(e.data).toString()));
  await waitFor(() => /^\d+\n/.test(out), { what: 'child pid' });
  const pid = Number(out.trim());
  assert.ok(isAlive(pid));
  return pid;
}
