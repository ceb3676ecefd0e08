// One process run to its end through any ExecClient, counting its output bytes (the relay and
// container benchmarks' output-throughput round).
import type { ExecClient } from '../src/client/api';

/** Starts argv in / and resolves with the number of output bytes once it exited and closed. */
export async function runToEnd(c: ExecClient, argv: string[]): Promise<number> {
  const p = await c.startProcess({ argv, cwd: '/' } as Parameters<ExecClient['startProcess']>[0]);
  let n = 0;
  p.onOutput((e) => (n += e.data.length));
  await p.exited;
  await p.closed;
  return n;
}
