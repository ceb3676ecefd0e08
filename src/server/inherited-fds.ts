// Descriptors the server process inherited without close-on-exec. Node opens everything of
// its own close-on-exec, but a descriptor a parent leaked into the server (a shell's `exec 7<dir`,
// a launcher's pipe) stays inheritable and would reach every child the server starts, pipes
// and PTYs alike (node-pty and libuv close nothing). The standalone CLI closes them at startup;
// sandboxed children get theirs closed inside the sandbox too (./sandbox/bwrap.ts), which also
// covers servers running inside another process (the VS Code extension host), whose
// descriptors are not the server's to close.
import fs from 'node:fs';

const O_CLOEXEC = 0o2000000;

/** Descriptors above 2 without close-on-exec (Linux /proc; elsewhere none are found). */
export function inheritableDescriptors(): number[] {
  let names: string[];
  try {
    names = fs.readdirSync('/proc/self/fdinfo');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    try {
      const flags = /^flags:\s*([0-7]+)$/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      if (flags && (parseInt(flags[1], 8) & O_CLOEXEC) === 0) out.push(fd);
    } catch {
      // closed meanwhile (the readdir's own descriptor)
    }
  }
  return out.sort((a, b) => a - b);
}

/**
 * Whether `target` (where a descriptor points) is a log V8 opened in this process: --prof and
 * --log* write isolate-0x…-<pid>-v8.log (or --logfile's name), --perf-basic-prof and --perf-prof
 * /tmp/perf-<pid>.map and jit-<pid>.dump. V8 opens them without close-on-exec and keeps writing
 * to the number; closed, the number goes to the next socket or pipe, which then carries V8's
 * log lines (a profiled server sent its clients corrupt frames, and died on its first pipe).
 */
export function isOwnV8Log(target: string, pid: number, execArgv: readonly string[] = process.execArgv): boolean {
  const base = target.slice(target.lastIndexOf('/') + 1);
  if (base === `perf-${pid}.map` || base === `jit-${pid}.dump`) return true;
  if (new RegExp(`^isolate-0x[0-9a-f]+-${pid}-`).test(base)) return true;
  for (const a of execArgv) {
    const m = /^--logfile=(.+)$/.exec(a);
    if (m && m[1] !== '-' && (target === m[1] || target.endsWith(`/${m[1]}`))) return true;
  }
  return false;
}

/**
 * Closes what inheritableDescriptors finds, except Node's IPC channel (NODE_CHANNEL_FD, when a
 * Node parent forked the server) and V8's own logs (isOwnV8Log). Returns the closed numbers
 * (for the log).
 */
export function closeInheritedDescriptors(env: NodeJS.ProcessEnv = process.env): number[] {
  const keep = env.NODE_CHANNEL_FD !== undefined ? Number(env.NODE_CHANNEL_FD) : -1;
  const closed: number[] = [];
  for (const fd of inheritableDescriptors()) {
    if (fd === keep) continue;
    let target = '';
    try {
      target = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // already gone
    }
    if (isOwnV8Log(target, process.pid)) continue;
    try {
      fs.closeSync(fd);
      closed.push(fd);
    } catch {
      // already gone
    }
  }
  return closed;
}
