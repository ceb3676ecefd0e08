// PTY-backed child via node-pty. node-pty reports exec/chdir failures only as text on the
// terminal, so the executable and cwd are checked first to give the client a real error.
import fs from 'node:fs';
import path from 'node:path';
import type { IPty } from 'node-pty';
import type { ChildEvents, ChildHandle, SpawnRequest } from './child';
import { exitCodeOf, foregroundGroupOf, killGroup } from './child';

type NodePty = typeof import('node-pty');
let ptyModule: NodePty | undefined;
function loadPty(): NodePty {
  // Loaded lazily: a native module, only needed for tty processes.
  ptyModule ??= require('node-pty') as NodePty;
  return ptyModule;
}

function errno(code: string, syscall: string, p: string): NodeJS.ErrnoException {
  const e = new Error(`${code}: ${syscall} '${p}'`) as NodeJS.ErrnoException;
  e.code = code;
  e.syscall = syscall;
  e.path = p;
  return e;
}

function isExecutableFile(p: string): boolean {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) return false;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** execvp-like lookup, in the child's PATH (or the libc default when unset). */
export function resolveExecutable(file: string, cwd: string, env: Record<string, string>): string {
  if (file.includes('/')) {
    const p = path.resolve(cwd, file);
    if (!fs.existsSync(p)) throw errno('ENOENT', 'spawn', file);
    if (!isExecutableFile(p)) throw errno('EACCES', 'spawn', file);
    return p;
  }
  const dirs = (env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':');
  for (const d of dirs) {
    const p = path.resolve(cwd, d || '.', file);
    if (isExecutableFile(p)) return p;
  }
  throw errno('ENOENT', 'spawn', file);
}

export async function spawnPty(req: SpawnRequest, events: ChildEvents): Promise<ChildHandle> {
  const st = await fs.promises.stat(req.cwd); // ENOENT/ENOTDIR surface as spawn errors
  if (!st.isDirectory()) throw errno('ENOTDIR', 'chdir', req.cwd);
  const file = resolveExecutable(req.argv[0], req.cwd, req.env);
  const pty: IPty = loadPty().spawn(file, req.argv.slice(1), {
    name: req.env.TERM || 'xterm-256color',
    cols: req.cols,
    rows: req.rows,
    cwd: req.cwd,
    env: req.env,
    encoding: null,
  } as Parameters<NodePty['spawn']>[2]);
  let exited = false;
  let stdinOpen = true;
  pty.onData((d: string | Buffer) => events.output('pty', typeof d === 'string' ? Buffer.from(d) : d));
  // node-pty emits exit only after the terminal's read side reached EOF: all output is in.
  pty.onExit(({ exitCode, signal }) => {
    exited = true;
    stdinOpen = false;
    events.exit(exitCodeOf(exitCode, signal ?? null));
    events.close();
  });
  const pid = pty.pid;
  return {
    pid,
    isPty: true,
    get stdinOpen() {
      return stdinOpen && !exited;
    },
    write(data) {
      pty.write(data);
    },
    closeStdin() {
      // A terminal has no separate stdin to close: send EOF (^D) like a user would.
      pty.write('\x04');
    },
    resize(rows, cols) {
      if (!exited) pty.resize(cols, rows);
    },
    interrupt() {
      // What Ctrl-C does: SIGINT to the terminal's foreground process group.
      killGroup(foregroundGroupOf(pid) ?? pid, 'SIGINT');
    },
    kill(signal) {
      const fg = foregroundGroupOf(pid); // read before the leader dies
      killGroup(pid, signal);
      if (fg !== undefined && fg !== pid) killGroup(fg, signal);
    },
    pause() {
      pty.pause();
    },
    resume() {
      pty.resume();
    },
  };
}
