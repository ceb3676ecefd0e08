// A transport to a server started as a command (e.g. `ssh host npx exec-server --listen stdio://`):
// JSON lines over the child's stdin/stdout, its stderr forwarded line by line to a log.
// The child never outlives the client: killed when the transport closes and when this process exits.
import { spawn, type ChildProcess } from 'node:child_process';
import { ConnectError } from '../rpc/connect-error';
import { StdioTransport } from './stdio';

export interface CommandTransportOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The child's stderr, one line at a time. */
  onStderr?: (line: string) => void;
  /** Grace period between SIGTERM and SIGKILL (default 2000 ms). */
  killGraceMs?: number;
}

export interface CommandTransport {
  transport: StdioTransport;
  child: ChildProcess;
  /** Resolves when the child has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns the command and resolves once it is running (rejects if it cannot be spawned). */
export function spawnCommandTransport(command: string, args: string[], opts: CommandTransportOptions = {}): Promise<CommandTransport> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env ?? process.env, cwd: opts.cwd });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
      child.once('exit', (code, signal) => res({ code, signal }));
      child.once('error', () => res({ code: null, signal: null }));
    });
    const killOnParentExit = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    child.once('error', (e) => {
      process.off('exit', killOnParentExit);
      const code = (e as NodeJS.ErrnoException).code;
      // "spawn x ENOENT" says neither what is missing nor where it was looked for.
      const why = code === 'ENOENT' ? (/[/\\]/.test(command) ? 'no such file' : 'not found on PATH') : code === 'EACCES' ? 'not executable (permission denied)' : e.message;
      reject(new ConnectError(`cannot start ${command}: ${why}`, code));
    });
    child.once('spawn', () => {
      process.on('exit', killOnParentExit);
      const transport = new StdioTransport(child.stdout!, child.stdin!);
      let errBuf = '';
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (d: string) => {
        errBuf += d;
        let nl: number;
        while ((nl = errBuf.indexOf('\n')) >= 0) {
          opts.onStderr?.(errBuf.slice(0, nl));
          errBuf = errBuf.slice(nl + 1);
        }
        if (errBuf.length > 64 * 1024) {
          opts.onStderr?.(errBuf);
          errBuf = '';
        }
      });
      child.stderr!.on('end', () => {
        if (errBuf) opts.onStderr?.(errBuf);
        errBuf = '';
      });
      transport.onClose(() => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), opts.killGraceMs ?? 2000);
        t.unref();
        child.once('exit', () => clearTimeout(t));
      });
      void exited.then(({ code, signal }) => {
        process.off('exit', killOnParentExit);
        // stdout usually ends first, but the exit can be read before that end (and never comes
        // when the child left its pipes to another process): either way the peer ended, not us.
        transport.peerGone(`command exited (${signal ?? `code ${code}`})`);
      });
      resolve({ transport, child, exited });
    });
  });
}
