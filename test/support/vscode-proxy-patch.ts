// What VS Code's proxy support does to Node's network modules in the extension host, imitated
// for tests (@vscode/proxy-agent 0.45, as shipped in code-server 4.139 / VS Code 1.10x, with
// `http.proxySupport` at its default "override"): `http.request`/`http.get` and the https ones
// are replaced by a function that sets `options.agent` to its own PacProxyAgent, which opens
// ITS OWN socket — to the URL's host:port ("DIRECT") or to the configured proxy — and so never
// calls an `options.createConnection` it was given; `net.connect` and `tls.connect` are wrapped
// (they load extra CA certificates first, then connect as asked).
//
// The imitation replaces the functions on the real module objects (what `ws` and every other
// module read at call time) and records every call, so a test can show that bytes meant for one
// stream never went through them. `proxy`: the port of a test listener standing for a configured
// http.proxy (every http(s) request is sent there instead, as an HttpProxyAgent would).
import { createRequire } from 'node:module';
import type * as httpT from 'node:http';
import type * as httpsT from 'node:https';
import type * as netT from 'node:net';
import type * as tlsT from 'node:tls';

// Not `import * as`: TypeScript's interop copies the module into a new object, and assigning
// there would patch nothing.
const req = createRequire(__filename);
const http = req('node:http') as typeof httpT;
const https = req('node:https') as typeof httpsT;
const net = req('node:net') as typeof netT;
const tls = req('node:tls') as typeof tlsT;

export interface ProxyPatch {
  /** One line per call of a patched function: `http.request 127.0.0.1:4000`, `net.connect …`. */
  readonly calls: string[];
  restore(): void;
}

type AnyFn = (...args: unknown[]) => unknown;

function target(args: unknown[]): string {
  const [a, b] = args;
  if (typeof a === 'string' || a instanceof URL) {
    const u = new URL(String(a));
    return `${u.hostname}:${u.port}`;
  }
  if (typeof a === 'number') return `${typeof b === 'string' ? b : 'localhost'}:${a}`;
  const o = (a ?? {}) as { host?: string; hostname?: string; port?: number | string; path?: string };
  return `${o.hostname ?? o.host ?? 'localhost'}:${o.port ?? ''}`;
}

/** Installs the imitation until restore(). */
export function patchLikeVsCodeProxySupport(opts: { proxy?: number } = {}): ProxyPatch {
  const calls: string[] = [];
  const saved: [object, string, AnyFn][] = [];
  const replace = (mod: object, name: string, make: (original: AnyFn) => AnyFn) => {
    const original = (mod as Record<string, AnyFn>)[name];
    saved.push([mod, name, original]);
    (mod as Record<string, AnyFn>)[name] = make(original);
  };
  const originalNetConnect = net.connect;
  const originalTlsConnect = tls.connect;
  for (const [mod, label, secure] of [
    [http, 'http', false],
    [https, 'https', true],
  ] as const) {
    for (const fn of ['request', 'get'] as const) {
      replace(mod, fn, (original) => (...args: unknown[]) => {
        calls.push(`${label}.${fn} ${target(args)}`);
        // Normalise (url, options, cb) as the proxy agent does, then put its own agent in.
        let [url, options, cb] = args as [unknown, unknown, unknown];
        if (typeof url !== 'string' && !(url instanceof URL)) {
          cb = options;
          options = url;
          url = undefined;
        }
        const o = { ...((options ?? {}) as Record<string, unknown>) };
        if (url) {
          const u = new URL(String(url));
          Object.assign(o, { protocol: u.protocol, hostname: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, ...o });
        }
        const agent = new (secure ? https.Agent : http.Agent)();
        // Its own socket: the proxy's port, or the request's host:port (DIRECT). `o.createConnection` is never called.
        (agent as unknown as { createConnection: (co: tlsT.ConnectionOptions) => unknown }).createConnection = (co: tlsT.ConnectionOptions) => {
          const where = opts.proxy ? { host: '127.0.0.1', port: opts.proxy } : { host: String(o.hostname ?? o.host ?? 'localhost'), port: Number(o.port) };
          return secure && !opts.proxy ? originalTlsConnect({ ...co, ...where }) : originalNetConnect(where);
        };
        o.agent = agent;
        return (original as AnyFn)(o, cb);
      });
    }
  }
  for (const name of ['connect', 'createConnection'] as const) {
    replace(net, name, (original) => (...args: unknown[]) => {
      calls.push(`net.${name} ${target(args)}`);
      return original(...args);
    });
  }
  replace(tls, 'connect', (original) => (...args: unknown[]) => {
    calls.push(`tls.connect ${target(args)}`);
    return original(...args);
  });
  return {
    calls,
    restore() {
      for (const [mod, name, fn] of saved.reverse()) (mod as Record<string, AnyFn>)[name] = fn;
      saved.length = 0;
    },
  };
}

/** A listener on 127.0.0.1 that records every byte it is sent (and answers nothing). */
export async function recordingListener(port = 0): Promise<{ port: number; received(): string; close(): Promise<void> }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<netT.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as netT.AddressInfo).port,
    received: () => Buffer.concat(chunks).toString('latin1'),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
