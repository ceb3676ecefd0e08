// Helpers shared by the fuzz tests: a closed local port for http/request, the "is this a
// proper JSON-RPC error" check, a per-request deadline. (Processes and waits: test/support.)
import * as net from 'node:net';

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
