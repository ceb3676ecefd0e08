// `exec-server --detach`: finds this user's detached websocket server of this CLI version (started
// by an earlier --detach) or starts one, then prints where it is as one JSON line on stdout and
// exits. Connect to Host runs it over ssh so the server outlives the ssh session (a window reload
// kills the extension host and its ssh processes); the extension then talks websocket to it
// through `ssh -W 127.0.0.1:PORT` and resumes its session after a reload.
// The server listens on 127.0.0.1 only, with a random capability token. Port, pid and token are
// kept in ~/.exec-server/run/<version>-<hostname>.json (0600, in a 0700 folder; the host name:
// a home shared by several machines over NFS holds one record per machine). The token reaches the new
// server through a 0600 file that is deleted once it listens, and the caller through stdout —
// never through any process's argv. The server exits after `--idle-exit` seconds with no
// connection and no session (a detached session's processes end with its TTL) and removes its
// record when it exits. A record can still outlive its server (SIGKILL, a crash): it is reused
// only when the listener on its port is provably that server (src/transports/detach-proof.ts: on Linux
// the socket is ours and held by the recorded pid; everywhere it proves it knows the token) —
// otherwise another local user who binds the port would receive the token and the client's
// keystrokes and file writes. When in doubt a new server is started and the record replaced.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { listenerHeldBy, provesToken } from '../transports/detach-proof';
import { VERSION } from '../version';

/** Default --idle-exit of a server started by --detach (seconds): its sessions keep their processes for their own TTL (--session-ttl) after the last client left; after that the server only saves the next connect its start-up. */
export const DEFAULT_DETACHED_IDLE_EXIT_SEC = 60;
/** --session-ttl of a plain server: the engine's own default. */
export const DEFAULT_SESSION_TTL_SEC = 30;
/**
 * --session-ttl of a server started by --detach. Its sessions are a window's terminals, resumed
 * after a window reload; on a loaded machine the reload alone took 70–90 s (measured in the e2e
 * run), so 30 s lost them. 5 minutes: a reload or a short network outage, not a day.
 */
export const DEFAULT_DETACHED_SESSION_TTL_SEC = 300;

export interface RunRecord {
  pid: number;
  port: number;
  token: string;
  version: string;
}

/** What --detach prints (one JSON line). */
export interface DetachAnswer extends RunRecord {
  /** false: an already running server was found. */
  started: boolean;
}

export function runPaths(home = os.homedir(), version = VERSION, hostname = os.hostname()) {
  const dir = path.join(home, '.exec-server', 'run');
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);
  const v = `${safe(version)}-${safe(hostname) || 'host'}`;
  return { dir, record: path.join(dir, `${v}.json`), lock: path.join(dir, `${v}.lock`), log: path.join(dir, `${v}.log`) };
}

/** The run folder: created 0700; an existing one must be ours, a real folder, not writable by others. */
function ensureRunDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = fs.lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (process.getuid && st.uid !== process.getuid()) throw new Error(`${dir} belongs to another user (uid ${st.uid})`);
  if (st.mode & 0o077) fs.chmodSync(dir, 0o700);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export function readRunRecord(file: string): RunRecord | undefined {
  try {
    const r = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<RunRecord>;
    if (Number.isInteger(r.pid) && Number.isInteger(r.port) && typeof r.token === 'string' && r.token && typeof r.version === 'string') return r as RunRecord;
  } catch {
    /* missing or unreadable: none */
  }
  return undefined;
}

/** GET /readyz answers 200: an exec-server listens on that port. */
function ready(port: number, timeoutMs = 3000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/readyz', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/** One --detach at a time per version (two windows connecting at once must not start two servers). */
async function lock(file: string, timeoutMs = 20_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = fs.openSync(file, 'wx', 0o600);
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => fs.rmSync(file, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = Number(fs.readFileSync(file, 'utf8').trim());
      // A holder that died (killed ssh session) leaves its lock behind.
      if (!Number.isInteger(holder) || holder <= 0 || !alive(holder)) {
        fs.rmSync(file, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`another exec-server --detach (pid ${holder}) holds ${file}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function writePrivate(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.rmSync(tmp, { force: true });
  fs.writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
  fs.renameSync(tmp, file);
}

function withoutKey(env: NodeJS.ProcessEnv, key: string): NodeJS.ProcessEnv {
  const copy = { ...env };
  delete copy[key];
  return copy;
}

/** Starts the server detached (own session, no ssh descriptors) and waits for its URL line. */
async function startDetached(paths: ReturnType<typeof runPaths>, idleExitSec: number, sessionTtlSec: number, home: string): Promise<RunRecord> {
  const token = randomBytes(32).toString('base64url');
  const tokenFile = path.join(paths.dir, `token-${process.pid}-${randomBytes(6).toString('hex')}`);
  writePrivate(tokenFile, token);
  const logFd = fs.openSync(paths.log, 'a', 0o600);
  try {
    const script = process.argv[1];
    const child = spawn(process.execPath, [...process.execArgv, script, '--listen', 'ws://127.0.0.1:0', '--ws-auth', 'capability-token', '--ws-token-file', tokenFile, '--idle-exit', String(idleExitSec), '--session-ttl', String(sessionTtlSec), '--run-record', paths.record], {
      detached: true,
      cwd: home,
      // Its stdin is /dev/null: an inherited CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE=true would stop it at once.
      env: withoutKey(process.env, 'CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE'),
      stdio: ['ignore', 'pipe', logFd],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error(`the detached server printed no URL within 30 s (see ${paths.log})`)), 30_000);
      const fail = (e: Error) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(e);
      };
      child.on('error', fail);
      child.on('exit', (code, sig) => fail(new Error(`the detached server exited (${code ?? sig}) before listening (see ${paths.log})`)));
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf('\n');
        if (nl < 0) return;
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve(out.slice(0, nl).trim());
      });
    });
    child.stdout!.destroy();
    child.unref();
    const port = Number(new URL(url).port);
    const rec: RunRecord = { pid: child.pid!, port, token, version: VERSION };
    writePrivate(paths.record, JSON.stringify(rec) + '\n');
    return rec;
  } finally {
    fs.closeSync(logFd);
    // The server read it at startup; it is needed nowhere else.
    fs.rmSync(tokenFile, { force: true });
  }
}

/**
 * A detached server is found only through its run record: once the record is gone or names
 * another server (the folder was deleted, a newer start replaced it) — or never named this one
 * within a minute (the --detach that started it died) — no client can reach its sessions again,
 * and `unreachable` is called. Checked every second; `seenFirst` runs when the record first names it
 * (from then on a record gone or replaced ends the server).
 */
export function watchRunRecord(file: string, unreachable: (why: string) => void, seenFirst?: () => void): void {
  const start = Date.now();
  let seen = false;
  const timer = setInterval(() => {
    const rec = readRunRecord(file);
    if (rec?.pid === process.pid) {
      if (!seen) seenFirst?.();
      seen = true;
    } else if (seen || Date.now() - start > 60_000) {
      clearInterval(timer);
      unreachable(seen ? `its run record ${file} is gone or names another server` : `its run record ${file} was never written`);
    }
  }, 1000);
  timer.unref();
}

/**
 * Removes the run record if it still names this process (a newer server's record stays). Called
 * on every exit path the server has (signals, idle exit, unreachable, process exit); synchronous.
 */
export function removeOwnRunRecord(file: string): void {
  try {
    if (readRunRecord(file)?.pid === process.pid) fs.rmSync(file, { force: true });
  } catch {
    /* exiting anyway: a leftover record is not trusted by the next --detach */
  }
}

/**
 * Is `rec` this user's running server? Live pid, /readyz, then the listener's identity: on Linux
 * the socket on the port must be ours and held by the recorded pid, and in any case the
 * server must prove it knows the token (a listener of this same user, or anywhere /proc cannot
 * say, is trusted only by that proof).
 */
async function isOurServer(rec: RunRecord): Promise<boolean> {
  if (rec.version !== VERSION || rec.pid <= 0 || rec.port < 1 || rec.port > 65535 || !alive(rec.pid)) return false;
  if (!(await ready(rec.port))) return false;
  if (listenerHeldBy(rec.port, rec.pid) === 'no') return false;
  return provesToken(rec.port, rec.token);
}

/** Finds the running server (a record whose listener proves to be it) or starts one. */
export async function ensureDetachedServer(opts: { idleExitSec?: number; sessionTtlSec?: number; home?: string } = {}): Promise<DetachAnswer> {
  const home = opts.home ?? os.homedir();
  const paths = runPaths(home);
  ensureRunDir(paths.dir);
  const unlock = await lock(paths.lock);
  try {
    const rec = readRunRecord(paths.record);
    if (rec && (await isOurServer(rec))) return { ...rec, started: false };
    const started = await startDetached(paths, opts.idleExitSec ?? DEFAULT_DETACHED_IDLE_EXIT_SEC, opts.sessionTtlSec ?? DEFAULT_DETACHED_SESSION_TTL_SEC, home);
    return { ...started, started: true };
  } finally {
    unlock();
  }
}
