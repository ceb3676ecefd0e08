// The harness's bounded wait (plain Node, so it cannot import test/support/wait.ts): polls
// `probe` until it returns a truthy value (returned) or throws (rethrown), or rejects after
// `timeout` ms naming `what`. For state without an event to subscribe to: an HTTP health check,
// a process in /proc, images in a webview. `changeIn` is the harness loop's tick.
import { watch } from 'node:fs';

export async function waitUntil(probe, { timeout = 20_000, interval = 100, what = 'a condition' } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    // why: the poll interval of this one bounded wait (what it waits for has no event)
    await new Promise((r) => setTimeout(r, interval));
  }
}

/**
 * Resolves at the first change in `dir` (a request file written) or after `ms`, whichever comes
 * first: the harness's loop answers a request at once and still looks at its other state (the
 * results file, code-server alive, questions not shown yet) at least that often.
 */
export function changeIn(dir, ms) {
  return new Promise((resolve) => {
    let watcher;
    const done = () => {
      clearTimeout(timer);
      watcher?.close();
      resolve();
    };
    const timer = setTimeout(done, ms);
    try {
      watcher = watch(dir, done);
    } catch {
      // no watcher (the directory is gone): the bound alone
    }
  });
}
