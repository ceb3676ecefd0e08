// Loopback test origins, on 127.0.0.1 only (test names reach them through the test's own name
// mapping, never DNS): for the credential-masking tests a plain HTTP and an HTTPS server (its
// certificates from a test CA, per SNI name) sharing one request handler; for the network
// question tests a plain origin that records what reached it.
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { ProcessCa } from '../../src/server/network/mitm-ca';

export interface TestOrigins {
  plain: http.Server;
  /** The plain server's port. */
  port: number;
  secure: https.Server;
  /** The TLS server's port. */
  tport: number;
  close(): Promise<void>;
}

export async function startTestOrigins(ca: ProcessCa, handler: http.RequestListener): Promise<TestOrigins> {
  const plain = http.createServer(handler);
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  const secure = https.createServer({ SNICallback: (name, cb) => cb(null, ca.contextFor(name)) }, handler);
  await new Promise<void>((r) => secure.listen(0, '127.0.0.1', r));
  return {
    plain,
    port: (plain.address() as net.AddressInfo).port,
    secure,
    tport: (secure.address() as net.AddressInfo).port,
    close: async () => {
      await new Promise((r) => plain.close(r));
      await new Promise((r) => secure.close(r));
    },
  };
}

/** A plain HTTP origin on 127.0.0.1 that records each request's path in `seen` and answers `origin <path>`. */
export interface EchoOrigin {
  server: http.Server;
  port: number;
  close(): Promise<void>;
}

export async function startEchoOrigin(seen: string[]): Promise<EchoOrigin> {
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    res.end(`origin ${req.url}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
