// Pipe-backed child. `detached: true` makes the child lead its own process group, so
// interrupt/terminate reach everything it started (a shell and its pipeline).
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { ChildEvents, ChildHandle, SpawnRequest } from './child';
import { exitCodeOf, killGroup, killHolders, killTree, stdioMarkOf } from './child';
import { pipeStdio } from './pty-masters';
import { readRecycled } from './recycled-pipe-reader';

/**
 * `stdio` with `kind` at `fd` (slots before it that are not set: not opened): a Node IPC channel,
 * or a pipe (over whatever was there: a master's /dev/null is replaced as well).
 */
function withStdioAt(stdio: StdioOptions, fd: number | undefined, kind: 'ipc' | 'pipe'): StdioOptions {
  if (fd === undefined) return stdio;
  const out = [...(stdio as unknown[])];
  while (out.length < fd) out.push('ignore');
  out[fd] = kind;
  return out as StdioOptions;
}

/**
 * `child`'s 'close' without the IPC channel: Node counts the channel among what 'close' waits
 * for but only when the child ends it, not when we disconnect (child_process maybeClose is
 * called from the channel's EOF only), so a channel we disconnected would keep it from ever
 * firing. This waits for what else it waits for: the exit and the output pipes.
 */
function whenStdioClosed(child: ChildProcess, f: () => void): void {
  const pipes = [child.stdout, child.stderr].filter((s) => s !== null);
  let waiting = pipes.length + 1;
  const one = () => {
    if (--waiting === 0) process.nextTick(f);
  };
  child.once('exit', one);
  for (const s of pipes) {
    if (s.destroyed) one();
    else s.once('close', one);
  }
}

export function spawnPipe(req: SpawnRequest, events: ChildEvents): Promise<ChildHandle> {
  return new Promise((resolve, reject) => {
    const child = spawn(req.argv[0], req.argv.slice(1), {
      cwd: req.cwd,
      env: req.env,
      argv0: req.arg0,
      detached: true,
      // Other terminals' PTY masters are overlaid with /dev/null (./pty-masters.ts).
      stdio: withStdioAt(withStdioAt(pipeStdio([req.pipeStdin ? 'pipe' : 'ignore', 'pipe', 'pipe']), req.channel?.fd, 'ipc'), req.readyPipe?.fd, 'pipe'),
      windowsHide: true,
    });
    // Read at once: the child has just exec'ed (spawn returns after the exec), its descriptors are still ours.
    const mark = child.pid !== undefined ? stdioMarkOf(child.pid) : undefined;
    // Before any message can be read (the channel's reads start in a later turn).
    if (req.channel) req.channel.onChannel(child);
    const ready = req.readyPipe && (child.stdio[req.readyPipe.fd] as Readable | null);
    if (ready) {
      ready.on('data', req.readyPipe!.onData);
      ready.on('error', () => {});
    }
    let spawned = false;
    let stdinOpen = req.pipeStdin;
    child.once('error', (err) => {
      if (!spawned) reject(err);
    });
    child.stdin?.on('error', () => {
      // EPIPE after the child closed its stdin: later writes report stdinClosed.
      stdinOpen = false;
    });
    child.stdin?.on('close', () => {
      stdinOpen = false;
    });
    // Streaming pipes read into recycled blocks (./recycled-pipe-reader.ts).
    readRecycled(child.stdout!, (d) => events.output('stdout', d));
    readRecycled(child.stderr!, (d) => events.output('stderr', d));
    // A read error on an output pipe (e.g. EIO) must not crash the whole server through an
    // unhandled 'error' event; the stream is destroyed and the child's 'close' still follows.
    child.stdout!.on('error', () => {});
    child.stderr!.on('error', () => {});
    child.once('spawn', () => {
      spawned = true;
      const pid = child.pid!;
      child.once('exit', (code, signal) => events.exit(exitCodeOf(code, signal)));
      if (req.channel) whenStdioClosed(child, () => events.close());
      else child.once('close', () => events.close());
      resolve({
        pid,
        isPty: false,
        get stdinOpen() {
          return stdinOpen && !!child.stdin && !child.stdin.destroyed && child.stdin.writable;
        },
        get pendingStdinBytes() {
          return child.stdin?.writableLength ?? 0;
        },
        write(data) {
          child.stdin?.write(data);
        },
        closeStdin() {
          stdinOpen = false;
          child.stdin?.end();
        },
        resize() {
          throw new Error('not a PTY');
        },
        interrupt() {
          killGroup(pid, 'SIGINT', true);
        },
        kill(signal) {
          // While the leader lives its descendants are found through it (not after: pids may be reused).
          const alive = child.exitCode === null && child.signalCode === null;
          if (signal === 'SIGKILL' && alive) killTree(pid, true, mark);
          else {
            killGroup(pid, signal, alive);
            // A leader gone before its output ended: what still holds that output keeps it open.
            if (signal === 'SIGKILL' && mark) killHolders(mark);
          }
        },
        pause() {
          child.stdout?.pause();
          child.stderr?.pause();
        },
        resume() {
          child.stdout?.resume();
          child.stderr?.resume();
        },
      });
    });
  });
}
