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
 * Closes what inheritableDescriptors finds, except Node's IPC channel (NODE_CHANNEL_FD, when a
 * Node parent forked the server). Returns the closed numbers (for the log).
 */
export function closeInheritedDescriptors(env: NodeJS.ProcessEnv = process.env): number[] {
  const keep = env.NODE_CHANNEL_FD !== undefined ? Number(env.NODE_CHANNEL_FD) : -1;
  const closed: number[] = [];
  for (const fd of inheritableDescriptors()) {
    if (fd === keep) continue;
    try {
      fs.closeSync(fd);
      closed.push(fd);
    } catch {
      // already gone
    }
  }
  return closed;
}
