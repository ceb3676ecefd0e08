// One executor-local managed proxy per proxied process (networkProxyLaunch): what the child's
// environment gets (REFERENCE §1.3 step 2) and the proxy itself, served on the two
// listening sockets the relay opened inside the sandbox's network namespace and handed over
// (./relay-source.ts). No listener exists on the host: the only way in is a connection the
// sandboxed child makes to its own loopback, inside its own network namespace.
import { setMaxListeners } from 'node:events';
import net from 'node:net';
import type { IpcChannel } from '../process/child';
import type { CallbackAnswer, DecisionHost, PolicyDecisionParams } from './decide';
import { serveHttpProxy, type Masking } from './http-proxy';
import type { NetworkProxyLaunch } from './launch-config';
import type { Protocol } from './policy';
import { networkResolver } from './resolve';
import { serveSocks5 } from './socks5';
import { sandboxChildPid, startTransparent, type Transparent } from './transparent';

/** Variables that get the HTTP proxy's URL (http://127.0.0.1:<port>). */
export const HTTP_PROXY_KEYS = [
  'HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'WS_PROXY', 'WSS_PROXY', 'ws_proxy', 'wss_proxy',
  'BUNDLE_HTTP_PROXY', 'BUNDLE_HTTPS_PROXY', 'DOCKER_HTTP_PROXY', 'DOCKER_HTTPS_PROXY', 'PIP_PROXY',
  'YARN_HTTP_PROXY', 'YARN_HTTPS_PROXY', 'NPM_CONFIG_PROXY', 'NPM_CONFIG_HTTP_PROXY', 'NPM_CONFIG_HTTPS_PROXY',
  'npm_config_proxy', 'npm_config_http_proxy', 'npm_config_https_proxy',
];
/** Variables that get the SOCKS5 URL (socks5h://127.0.0.1:<port>), or the HTTP one without SOCKS. */
export const SOCKS_PROXY_KEYS = ['ALL_PROXY', 'all_proxy', 'FTP_PROXY', 'ftp_proxy'];
const NO_PROXY_KEYS = ['NO_PROXY', 'no_proxy', 'BUNDLE_NO_PROXY', 'NPM_CONFIG_NOPROXY', 'npm_config_noproxy'];
/** NO_PROXY / no_proxy with allowLocalBinding (the reference's list). */
export const LOCAL_NO_PROXY = 'localhost,127.0.0.1,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16';

/** The variables that do not depend on the relay's ports (those are set inside the sandbox). */
export function staticProxyEnv(launch: NetworkProxyLaunch): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of NO_PROXY_KEYS) env[k] = '';
  if (launch.proxy.allowLocalBinding) env.NO_PROXY = env.no_proxy = LOCAL_NO_PROXY;
  env.NODE_USE_ENV_PROXY = '1';
  env.ELECTRON_GET_USE_PROXY = 'true';
  env.CODEX_NETWORK_PROXY_ACTIVE = '1';
  env.CODEX_NETWORK_ALLOW_LOCAL_BINDING = launch.proxy.allowLocalBinding ? '1' : '0';
  return env;
}

export interface ProxyOwner {
  processId: string;
  launch: NetworkProxyLaunch;
  /** credentialMasking: the dummies to swap and the CA to intercept with (./credentials.ts). */
  masking?: Masking;
  notify(params: PolicyDecisionParams): void;
  /**
   * The client's decision callback (network/policyRequest, ./callback.ts); never rejects.
   * `signal` aborts when the child's connection or the process is gone.
   */
  ask?: (processId: string, request: { protocol: Protocol; host: string; port: number }, timeoutMs: number, signal: AbortSignal) => Promise<CallbackAnswer>;
  log(level: 'debug' | 'info' | 'warn', message: string): void;
  /** Transparent TCP (./transparent.ts): the helper to start once the relay's listeners are in. */
  transparentHelper?: string;
}

/** Concurrent proxied connections per process; more are reset at once. */
export const MAX_CONNECTIONS = 128;

type Listener = 'http' | 'socks';

/**
 * Serves the proxy of one process on the listening sockets its relay hands over `channel`
 * (./relay-source.ts), until close() (the process is gone). The channel is as untrusted as the
 * sandboxed command: only the first message per listener is taken, it must carry a TCP listener
 * on 127.0.0.1, and anything else ends the proxy. Once both listeners are in (and, with
 * transparent TCP, the namespace is routed through ./transparent.ts), the relay is told to go on
 * (`{ready: true}`: it passes the ports to the command's script and exits); on a failure it is
 * told why (`{error}`) and the command does not run (exit 101).
 */
export function attachProxy(channel: IpcChannel, owner: ProxyOwner): { close(): void } {
  const { launch } = owner;
  const timeout = launch.policyDecisionTimeoutMs;
  const host: DecisionHost = {
    processId: owner.processId,
    config: launch.proxy,
    resolve: (name) => networkResolver()(name),
    notify: (params) => {
      // The executor's audit record (the reference logs codex.network_proxy.policy_decision).
      owner.log('debug', `network policy decision ${JSON.stringify({ ...params, ...launch.auditMetadata, environmentId: launch.environmentId, executionId: launch.executionId })}`);
      owner.notify(params);
    },
  };
  // Pending questions of this process are dropped (denied) when it ends, as on the reference.
  const ended = new AbortController();
  setMaxListeners(0, ended.signal); // one listener per waiting connection (bounded below)
  const ask = timeout !== undefined ? owner.ask : undefined;
  const servers = new Map<Listener, net.Server>();
  const open = new Set<net.Socket>();
  let transparent: Transparent | undefined;
  let closed = false;
  const disconnect = () => {
    if (channel.connected) channel.disconnect();
  };
  /** Tells the relay `message`, then disconnects: nothing more is read from it. */
  const lastWord = (message: object) => {
    if (!channel.connected) return;
    if (!channel.send) return disconnect();
    channel.send(message, () => disconnect());
  };
  const close = (word?: object) => {
    if (closed) return;
    closed = true;
    ended.abort();
    if (word) lastWord(word);
    else disconnect();
    for (const srv of servers.values()) srv.close();
    transparent?.close();
    for (const sock of open) sock.destroy();
    open.clear();
  };
  const refuse = (why: string) => {
    owner.log('warn', `${owner.processId}: network proxy relay: ${why}; the proxy is closed`);
    close({ error: why.replace(/[\r\n]+/g, ' ') });
  };

  type Handler = (stream: net.Socket & { client: string }, host: DecisionHost) => Promise<void>;
  const serveConnection = (sock: net.Socket, handler: Handler) => {
    // A connection the child closed is destroyed (its descriptor closed) as its end is read, but
    // its 'close' (which takes it out of `open`) comes only in the loop's close phase: a connect
    // read in the same wakeup as those ends saw them all still open and was reset.
    if (open.size >= MAX_CONNECTIONS) for (const s of open) if (s.destroyed) open.delete(s);
    if (closed || open.size >= MAX_CONNECTIONS) return void sock.resetAndDestroy();
    open.add(sock);
    sock.once('close', () => open.delete(sock));
    sock.on('error', () => {});
    sock.setNoDelay(true);
    // As the connection appears to the proxy (the reference's `client`).
    const stream = Object.assign(sock, { client: `127.0.0.1:${sock.remotePort ?? 0}` });
    let streamHost = host;
    if (ask && timeout !== undefined) {
      // ...and so is the question of a connection the child closed while it waited.
      const gone = new AbortController();
      const stop = () => gone.abort();
      sock.once('close', stop);
      ended.signal.addEventListener('abort', stop, { once: true });
      sock.once('close', () => ended.signal.removeEventListener('abort', stop));
      streamHost = { ...host, ask: (request) => ask(owner.processId, request, timeout, gone.signal) };
    }
    handler(stream, streamHost).catch((e) => {
      owner.log('warn', `proxied connection of ${owner.processId} failed: ${String(e)}`);
      sock.destroy();
    });
  };

  channel.on('message', (message, handle) => {
    if (closed) return;
    const m = message as { listener?: unknown } | null;
    const listener = m && typeof m === 'object' ? m.listener : undefined;
    if ((listener !== 'http' && listener !== 'socks') || servers.has(listener)) {
      if (handle instanceof net.Server) handle.close();
      else if (handle instanceof net.Socket) handle.destroy();
      return refuse('unexpected message');
    }
    if (!(handle instanceof net.Server)) return refuse(`no listening socket for ${listener}`);
    servers.set(listener, handle);
    const at = handle.address();
    if (!at || typeof at === 'string' || at.address !== '127.0.0.1') return refuse(`the ${listener} listener is not on 127.0.0.1`);
    handle.on('error', () => refuse(`the ${listener} listener failed`));
    // A child that half-closes (shuts down its sending side) still gets the rest of the answer;
    // Node's received server would end our side at the child's FIN and drop what is in flight.
    (handle as net.Server & { allowHalfOpen: boolean }).allowHalfOpen = true;
    const handler: Handler = listener === 'http' ? (st, h) => serveHttpProxy(st, h, owner.masking) : serveSocks5;
    if (listener === 'socks' && !launch.proxy.enableSocks5) handle.close();
    else handle.on('connection', (sock: net.Socket) => serveConnection(sock, handler));
    if (servers.size === 2) void ready();
  });
  const ready = async () => {
    if (owner.transparentHelper) {
      const inside = channel.pid !== undefined ? sandboxChildPid(channel.pid) : undefined;
      if (inside === undefined) return refuse('transparent TCP: the sandbox\'s first process was not found');
      try {
        const t = await startTransparent(owner.transparentHelper, inside, serveConnection, (level, m) => owner.log(level, `${owner.processId}: ${m}`));
        if (closed) return t.close();
        transparent = t;
      } catch (e) {
        return refuse(e instanceof Error ? e.message : String(e));
      }
    }
    if (!closed) lastWord({ ready: true });
  };
  return { close };
}
