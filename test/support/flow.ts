// Shared pieces of the flow-control / binary-output tests: a child that writes numbered lines
// and records how far it got (so a test sees the child itself block), a checker for the
// numbered lines, our websocket server, and bounded waits.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ExecServer } from '../../src/server/exec-server';
import type { ServerOptions } from '../../src/server/api';
import { serveConnection } from '../../src/transports/serve';
import { listenWebSocket, type WebSocketListener } from '../../src/transports/websocket-server';
import type { WebSocketTransport } from '../../src/transports/websocket-transport';
import { sleep, waitFor as waitForCondition } from './wait';

export const LINE_BYTES = 10; // "%09d\n"

/**
 * argv of a child writing lines 1..total ("000000001\n"...), blocking when its stdout is not
 * read; every 100 lines it writes how many it has written to `progressFile`. With `hold`, it
 * stops after line `afterLine` (flushed) until `untilFile` exists, so a test can be sure the
 * process is still running when it needs it to be.
 */
export function numberedLines(total: number, progressFile: string, hold?: { afterLine: number; untilFile: string }): string[] {
  const py = [
    'import os, sys, time',
    'out = sys.stdout.buffer',
    `total = ${total}`,
    `hold = ${hold ? hold.afterLine : 0}`,
    'for i in range(1, total + 1):',
    "    out.write(b'%09d\\n' % i)",
    '    if i % 100 == 0 or i == total or i == hold:',
    '        out.flush()',
    `        with open(${JSON.stringify(progressFile + '.tmp')}, 'w') as f: f.write(str(i))`,
    `        os.replace(${JSON.stringify(progressFile + '.tmp')}, ${JSON.stringify(progressFile)})`,
    ...(hold ? ['    if i == hold:', `        while not os.path.exists(${JSON.stringify(hold.untilFile)}): time.sleep(0.01)`] : []),
  ].join('\n');
  return ['python3', '-c', py];
}

/** Lines the child has written so far (from its progress file). */
export function progress(file: string): number {
  try {
    return Number(fs.readFileSync(file, 'utf8')) || 0;
  } catch {
    return 0;
  }
}

/** Checks a stream of numbered lines as it arrives: in order, none missing, none twice. */
export class LineChecker {
  private partial = '';
  lines = 0;
  bytes = 0;
  error: string | undefined;
  push(data: Uint8Array): void {
    this.bytes += data.length;
    const text = this.partial + Buffer.from(data).toString('latin1');
    const parts = text.split('\n');
    this.partial = parts.pop()!;
    for (const p of parts) {
      const want = String(this.lines + 1).padStart(9, '0');
      if (p.replace(/\r$/, '') !== want && !this.error) this.error = `line ${this.lines + 1}: got ${JSON.stringify(p.slice(0, 40))}`;
      this.lines++;
    }
  }
}

export function tmpDir(prefix = 'flow-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Our server on a websocket listener; `transports`: the server's side of each connection, in order (its send buffer is observable). */
export async function ourWsServer(opts: ServerOptions = {}): Promise<{ server: ExecServer; listener: WebSocketListener; url: string; transports: WebSocketTransport[]; stop(): Promise<void> }> {
  const server = new ExecServer(opts);
  const transports: WebSocketTransport[] = [];
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => (transports.push(t), serveConnection(server, t)) });
  return { server, listener, url: listener.url, transports, stop: async () => (await listener.close(), await server.shutdown()) };
}

/** test/support/wait.ts's waitFor with this folder's (cond, what, timeoutMs) call shape. */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  await waitForCondition(cond, { what, timeout: timeoutMs });
}

export { sleep };

/** Waits until `value()` is above 0 and has not changed for `quietMs` (bounded), returns it. */
export async function settled(value: () => number, quietMs = 400, timeoutMs = 15_000): Promise<number> {
  await waitFor(() => value() > 0, 'a first value', timeoutMs);
  let last = value();
  let since = Date.now();
  const quiet = () => {
    const v = value();
    if (v !== last) {
      last = v;
      since = Date.now();
      return undefined;
    }
    return Date.now() - since >= quietMs ? v : undefined;
  };
  return waitForCondition(quiet, { timeout: timeoutMs, interval: 50, what: `the value to stay the same for ${quietMs} ms`, detail: () => `last ${last}` });
}
