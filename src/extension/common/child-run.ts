// Running a helper program (ssh, podman, docker, kubectl) to completion: argv only, no shell;
// its input written then closed; a timeout and an AbortSignal kill it (SIGKILL); stdout capped
// (every caller expects a few lines or a listing, and the far side decides what it prints —
// without a cap a runaway peer fills the extension host's memory until the timeout); stderr
// handed to a keeper the caller chooses (what each needs of it differs: ssh keeps its first and
// last part, a container CLI its tail) and, when asked, line by line as it comes (progress).
// The errors are the caller's (SshError, ContainerCliError): the runner only says which
// failure happened. Free of `vscode`.
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Keeps what it is given of a stream, within its own bound. */
export interface StreamKeeper {
  push(d: Buffer): void;
  toString(): string;
}

/** The caller's errors for the runner's own failures (the program's exit code is not one). */
export interface ChildErrors {
  /** The program could not be started (ENOENT: not installed). */
  spawnFailed(e: NodeJS.ErrnoException): Error;
  /** No exit within timeoutMs; `stderr` is what the keeper held then. */
  timedOut(stderr: string, timeoutMs: number): Error;
  /** More than maxStdout bytes on stdout. */
  stdoutFlood(maxStdout: number): Error;
}

export interface RunChildOptions {
  input?: string | Buffer;
  timeoutMs?: number;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** Each stderr line as it comes; a line without end longer than maxLine comes in pieces. */
  onStderr?(line: string): void;
}

export interface ChildRunSpec {
  maxStdout: number;
  stderr: StreamKeeper;
  /** Longest stderr line kept whole for onStderr before it is cut. */
  maxLine: number;
  errors: ChildErrors;
}

export function runChild(program: string, argv: readonly string[], spec: ChildRunSpec, opts: RunChildOptions = {}): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, argv as string[], { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env ?? process.env, windowsHide: true });
    const out: Buffer[] = [];
    let outSize = 0;
    const err = spec.stderr;
    const decoder = new StringDecoder('utf8');
    let partial = '';
    let settled = false;
    const timer = opts.timeoutMs ? setTimeout(() => finish(spec.errors.timedOut(err.toString(), opts.timeoutMs!)), opts.timeoutMs) : undefined;
    const onAbort = () => finish(new Error('cancelled'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    function finish(e?: Error, r?: ChildResult) {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (e) {
        child.kill('SIGKILL');
        reject(e);
      } else resolve(r!);
    }
    child.stdout.on('data', (d: Buffer) => {
      outSize += d.length;
      if (outSize > spec.maxStdout) return finish(spec.errors.stdoutFlood(spec.maxStdout));
      out.push(d);
    });
    const onStderr = opts.onStderr;
    const emit = (line: string) => onStderr?.(line.replace(/\r$/, ''));
    child.stderr.on('data', (d: Buffer) => {
      err.push(d);
      if (!onStderr) return;
      partial += decoder.write(d);
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) emit(l);
      // A "line" without end is cut once it is longer than maxLine, whatever came before it in
      // the read: the progress callback gets it in pieces of at most maxLine and one read.
      if (partial.length > spec.maxLine) {
        emit(partial);
        partial = '';
      }
    });
    // The last line, when the program did not end it, is a line too.
    child.stderr.on('end', () => {
      const last = partial + decoder.end();
      partial = '';
      if (last && !settled) emit(last);
    });
    child.on('error', (e: NodeJS.ErrnoException) => finish(spec.errors.spawnFailed(e)));
    child.on('close', (code, signal) => finish(undefined, { code, signal, stdout: Buffer.concat(out).toString(), stderr: err.toString() }));
    // The program may exit (auth failure, no such container) before it reads its input: a write
    // error then is not ours to report.
    child.stdin.on('error', () => undefined);
    if (opts.signal?.aborted) return onAbort();
    child.stdin.end(opts.input ?? '');
  });
}

/** Keeps the first `headMax` and the last `tailMax` bytes of a stream (`headMax` 0: the tail only). */
export class HeadTail implements StreamKeeper {
  private head: Buffer[] = [];
  private headSize = 0;
  private tail: Buffer[] = [];
  private tailSize = 0;
  private dropped = false;
  constructor(
    private readonly headMax: number,
    private readonly tailMax: number,
  ) {}
  push(d: Buffer): void {
    if (this.headSize < this.headMax) {
      const take = d.subarray(0, this.headMax - this.headSize);
      this.head.push(take);
      this.headSize += take.length;
      d = d.subarray(take.length);
    }
    if (!d.length) return;
    this.tail.push(d);
    this.tailSize += d.length;
    while (this.tailSize - this.tail[0].length >= this.tailMax) {
      this.tailSize -= this.tail.shift()!.length;
      this.dropped = true;
    }
  }
  toString(): string {
    return Buffer.concat(this.head).toString() + (this.dropped && this.headMax ? '\n…\n' : '') + Buffer.concat(this.tail).toString();
  }
}
