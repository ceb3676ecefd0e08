// A sandbox's mounts built once and entered by later starts. bubblewrap re-reads
// /proc/self/mountinfo for every bind, so a profile with hundreds of read-only carve-outs
// (./carve-outs.ts) costs tens of milliseconds a start in bwrap alone, growing with the square of
// the mounts (docs/performance.md). For such a profile the first start runs bwrap as usual and a
// holder is built beside it: a bwrap with the same mounts (user and mount namespaces only) whose
// namespaces the server keeps open. Later starts enter them with `nsenter` and run a second bwrap
// that only binds that view and adds the per-start namespaces, /dev, /proc and seccomp.
//
// What keeps this as strict as a fresh bwrap:
// - The holder's own /dev and /proc are the host's (the inner bwrap binds its device nodes and
//   needs /proc to map its user namespace); the sandbox never sees them: the inner bwrap always
//   mounts a fresh /dev and /proc (isolate mode only: with the pid namespace inherited a sandboxed
//   process could reach the holder's view through /proc/<pid>/root, so those starts never use it).
// - Its tmpfs mounts (the root, hidden directories, the private dir) are read-only: nothing one
//   sandboxed command writes there is seen by the next.
// - The host can change the tree under it: the kernel detaches a mount whose directory the host
//   removes, and a renamed directory moves its mount away. Before each entry the holder's mount
//   list must still equal the one it was built with (id, root and mount point of every mount);
//   otherwise the holder is dropped and the start runs a fresh bwrap.
// - The namespaces are entered by descriptor (/proc/<server>/fd/N), never by the holder's pid,
//   which the kernel could give to another process once the holder died.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

/** Settings; tests lower `minMounts` to run every sandboxed start through a holder. */
export const preparedNamespaceSettings = {
  /** A holder is used for a profile with at least this many mounts (fewer: a fresh bwrap is as fast). */
  minMounts: envNumber('EXEC_SERVER_SANDBOX_PREPARE_MIN_MOUNTS', 48),
  maxHolders: 8,
  /** A holder unused this long is dropped. */
  idleMs: 5 * 60_000,
  buildTimeoutMs: 10_000,
};

function envNumber(name: string, dflt: number): number {
  const v = Number(process.env[name]);
  return process.env[name] !== undefined && Number.isInteger(v) && v >= 0 ? v : dflt;
}

export interface PreparedTools {
  bwrap: string;
  bash: string;
  env: string;
  nsenter?: string;
}

/** How a start enters a holder: nsenter's namespace paths (descriptors of this process). */
export interface EnterNamespace {
  nsenter: string;
  user: string;
  mount: string;
}

/** bwrap options and how many arguments each takes (to walk an argv without mistaking a path for an option). */
const ARITY: Record<string, number> = {
  '--bind': 2, '--ro-bind': 2, '--ro-bind-try': 2, '--bind-try': 2, '--dev-bind': 2, '--symlink': 2,
  '--tmpfs': 1, '--dir': 1, '--remount-ro': 1, '--dev': 1, '--proc': 1, '--perms': 1,
};
const MOUNTS = new Set(['--bind', '--ro-bind', '--ro-bind-try', '--bind-try', '--dev-bind', '--tmpfs']);

/**
 * The holder's argv (before the namespace flags) for a sandbox's mount arguments, or undefined
 * when they hold something this module does not know how to carry over.
 */
export function holderMounts(mounts: readonly string[]): string[] | undefined {
  const out: string[] = [];
  const tmpfs: string[] = [];
  const rootBound = mounts[0] === '--bind' || mounts[0] === '--ro-bind' ? mounts[1] === '/' : false;
  if (!rootBound) out.push('--dir', '/tmp'); // the inner bwrap mounts its own root on /tmp
  for (let i = 0; i < mounts.length; ) {
    const op = mounts[i];
    const n = ARITY[op];
    if (n === undefined) return undefined;
    const args = mounts.slice(i + 1, i + 1 + n);
    // Not `--dev`: for it bwrap makes a second user namespace, and an unprivileged setns into the
    // mount namespace (owned by the first) is then refused with EPERM.
    if (op === '--dev') out.push('--dev-bind', '/dev', '/dev');
    else if (op === '--proc') out.push('--bind', '/proc', '/proc');
    else if (op === '--ro-bind' && args[0] === '/proc') return undefined; // inherit mode
    else {
      out.push(op, ...args);
      if (op === '--tmpfs') tmpfs.push(args[0]);
    }
    i += 1 + n;
  }
  for (const t of tmpfs) out.push('--remount-ro', t);
  if (!rootBound) out.push('--remount-ro', '/');
  return out;
}

/** The inner bwrap's mounts: the holder's view, a fresh /dev and /proc. */
export const INNER_MOUNTS = ['--bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];

function countMounts(args: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < args.length; i += 1 + (ARITY[args[i]] ?? 0)) if (MOUNTS.has(args[i])) n++;
  return n;
}

/** The holder's mount list as compared before each entry: id, root and mount point of each. */
function mountSignature(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n').map((l) => l.split(' ', 5).filter((_, i) => i !== 1 && i !== 2).join(' ')).join('\n');
  } catch {
    return undefined;
  }
}

interface Holder {
  state: 'building' | 'ready' | 'failed';
  child?: ChildProcess;
  pid?: number;
  fds: number[];
  mntIno?: number;
  signature?: string;
  timer?: NodeJS.Timeout;
}

const holders = new Map<string, Holder>();
let failures = 0;

/** Kills the holder's processes and closes its namespaces' descriptors. */
function release(h: Holder): void {
  h.child?.kill('SIGKILL');
  for (const fd of h.fds) fs.close(fd, () => {});
  h.fds = [];
}

function drop(key: string): void {
  const h = holders.get(key);
  if (!h) return;
  holders.delete(key);
  if (h.timer) clearTimeout(h.timer);
  release(h);
}

/** Kills every holder (tests; the holders also die with the server). */
export function dropPreparedNamespaces(): void {
  for (const key of [...holders.keys()]) drop(key);
}

function touch(key: string, h: Holder): void {
  if (h.timer) clearTimeout(h.timer);
  h.timer = setTimeout(() => drop(key), preparedNamespaceSettings.idleMs);
  h.timer.unref();
  holders.delete(key); // most recently used last
  holders.set(key, h);
}

function intact(h: Holder): boolean {
  if (!h.child || h.child.exitCode !== null || h.child.signalCode !== null || h.pid === undefined) return false;
  try {
    if (fs.statSync(`/proc/${h.pid}/ns/mnt`).ino !== h.mntIno) return false;
  } catch {
    return false;
  }
  return mountSignature(h.pid) === h.signature;
}

/**
 * The namespaces to enter for a sandbox whose holder argv is `mounts`, if a holder for them is
 * ready and intact; otherwise undefined (the caller runs a fresh bwrap) and, for a profile with
 * enough mounts, a holder is built for the next start.
 */
export function preparedNamespace(mounts: readonly string[], tools: PreparedTools): EnterNamespace | undefined {
  if (!tools.nsenter || failures >= 3 || countMounts(mounts) < preparedNamespaceSettings.minMounts) return undefined;
  const key = JSON.stringify(mounts);
  const h = holders.get(key);
  if (!h) {
    build(key, [...mounts], tools);
    return undefined;
  }
  if (h.state !== 'ready') return undefined;
  if (!intact(h)) {
    drop(key);
    build(key, [...mounts], tools);
    return undefined;
  }
  touch(key, h);
  return { nsenter: tools.nsenter, user: `/proc/${process.pid}/fd/${h.fds[0]}`, mount: `/proc/${process.pid}/fd/${h.fds[1]}` };
}

function build(key: string, mounts: string[], tools: PreparedTools): void {
  while (holders.size >= preparedNamespaceSettings.maxHolders) drop(holders.keys().next().value as string);
  const h: Holder = { state: 'building', fds: [] };
  holders.set(key, h);
  const fail = (): void => {
    if (h.state === 'failed') return;
    h.state = 'failed';
    failures++;
    release(h);
    touch(key, h); // remembered (not retried) until idle
  };
  const argv = [...mounts, '--unshare-user', '--cap-drop', 'ALL', '--die-with-parent', '--info-fd', '3', '--', tools.bash, '--norc', '-p', '-c', 'echo ready; read -r _'];
  let child: ChildProcess;
  try {
    child = spawn(tools.bwrap, argv, { stdio: ['pipe', 'pipe', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
  } catch {
    fail();
    return;
  }
  h.child = child;
  child.on('error', fail);
  child.on('exit', () => h.state === 'building' && fail());
  const timer = setTimeout(fail, preparedNamespaceSettings.buildTimeoutMs);
  timer.unref();
  let info = '';
  let out = '';
  let announced = false; // `ready` runs once, however the shell's line is split into chunks
  const info$ = child.stdio[3] as NodeJS.ReadableStream & { unref?: () => void };
  info$.setEncoding('utf8');
  info$.on('data', (d: string) => (info += d));
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => {
    out += d;
    if (!announced && h.state === 'building' && out.includes('ready\n')) {
      announced = true;
      void ready();
    }
  });
  const ready = async (): Promise<void> => {
    try {
      // bwrap writes the info before the holder's shell runs; wait for its closing brace.
      for (let i = 0; i < 100 && !info.includes('}'); i++) await new Promise((r) => setTimeout(r, 5));
      const parsed = JSON.parse(info) as { 'child-pid': number; 'mnt-namespace': number };
      const pid = parsed['child-pid'];
      h.fds.push(fs.openSync(`/proc/${pid}/ns/user`, 'r'), fs.openSync(`/proc/${pid}/ns/mnt`, 'r'));
      // The descriptor is the holder's namespace only if its inode is the one bwrap reported.
      if (fs.fstatSync(h.fds[1]).ino !== parsed['mnt-namespace'] || child.exitCode !== null) throw new Error('holder gone');
      h.pid = pid;
      h.mntIno = parsed['mnt-namespace'];
      h.signature = mountSignature(pid);
      // Entered once before use: a kernel or nsenter that refuses it disables holders.
      const trial = spawn(tools.nsenter!, [`--user=/proc/${process.pid}/fd/${h.fds[0]}`, `--mount=/proc/${process.pid}/fd/${h.fds[1]}`, '--preserve-credentials', '--', tools.bwrap, ...INNER_MOUNTS, '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-net', '--cap-drop', 'ALL', '--die-with-parent', '--', tools.env, 'true'], { stdio: 'ignore', env: { PATH: '/usr/bin:/bin' } });
      const code = await new Promise<number | null>((r) => {
        trial.on('error', () => r(-1));
        trial.on('exit', (c) => r(c));
      });
      clearTimeout(timer);
      if (code !== 0 || h.state !== 'building' || !intact(h)) throw new Error(`trial exit ${code}`);
      h.state = 'ready';
      failures = 0;
      touch(key, h);
    } catch {
      clearTimeout(timer);
      fail();
    }
  };
  // Neither the holder nor its pipes keep the server's event loop alive.
  child.unref();
  (child.stdin as unknown as { unref?: () => void })?.unref?.();
  (child.stdout as unknown as { unref?: () => void })?.unref?.();
  info$.unref?.();
}
