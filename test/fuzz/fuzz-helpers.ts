// Helpers shared by the fuzz tests: child-process accounting with `ps`, bounded waits,
// a closed local port for http/request, and the "is this a proper JSON-RPC error" check.
import { spawnSync } from 'node:child_process';
import * as net from 'node:net';

/** Live (non-zombie) direct children of `pid`, excluding the `ps` used to look. */
export function childPids(pid: number): number[] {
  const r = spawnSync('ps', ['-eo', 'pid=,ppid=,stat='], { encoding: 'utf8' });
  const out: number[] = [];
  for (const line of r.stdout.split('\n')) {
    const [p, pp, stat] = line.trim().split(/\s+/);
    if (Number(pp) === pid && Number(p) !== r.pid && stat && !stat.startsWith('Z')) out.push(Number(p));
  }
  return out;
}

export function isAlive(pid: number): boolean {
  const r = spawnSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' });
  const stat = r.stdout.trim();
  return stat !== '' && !stat.startsWith('Z');
}

export async function waitUntil(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A URL on 127.0.0.1 whose port was just free (connections are refused quickly). */
export async function closedPortUrl(): Promise<string> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return `http://127.0.0.1:${port}/fuzz`;
}

/** A JSON-RPC error object: integer code, string message. */
export function isRpcErrorShape(e: unknown): e is { code: number; message: string } {
  return (
    typeof e === 'object' && e !== null &&
    Number.isInteger((e as { code?: unknown }).code) &&
    typeof (e as { message?: unknown }).message === 'string'
  );
}

/** Rejects if `p` does not settle within `ms` (a stalled request is a fuzz failure). */
export function withTimeout<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what()}`)), ms);
    }),
  ]);
}
