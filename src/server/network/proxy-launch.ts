// One executor-local managed proxy per proxied process (networkProxyLaunch): what the child's
// environment gets (REFERENCE §1.3 step 2) and the proxy itself, attached to the executor's end
// of the relay descriptor (./mux.ts). No listener exists on the host: the only way in is a
// connection the sandboxed child makes to its own relay, inside its own network namespace.
import type { Duplex } from 'node:stream';
import type { CallbackAnswer, DecisionHost, PolicyDecisionParams } from './decide';
import { serveHttpProxy } from './http-proxy';
import type { NetworkProxyLaunch } from './launch-config';
import { MuxSession, type MuxStream } from './mux';
import type { Protocol } from './policy';
import { networkResolver } from './resolve';
import { serveSocks5 } from './socks5';

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
  notify(params: PolicyDecisionParams): void;
  /** The client's decision callback (network/policyRequest), when the connection offers one. */
  ask?: (processId: string, request: { protocol: Protocol; host: string; port: number }, timeoutMs: number) => Promise<CallbackAnswer>;
  log(level: 'debug' | 'info' | 'warn', message: string): void;
}

/** Serves the proxy on `relay` until it closes (the sandbox is gone) or close() is called. */
export function attachProxy(relay: Duplex, owner: ProxyOwner): { close(): void } {
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
    ask: timeout !== undefined && owner.ask ? (request) => owner.ask!(owner.processId, request, timeout) : undefined,
  };
  const mux = new MuxSession(
    relay,
    (s: MuxStream) => {
      if (s.listener === 'socks' && !launch.proxy.enableSocks5) return void s.destroy();
      const serve = s.listener === 'http' ? serveHttpProxy : serveSocks5;
      serve(s, host).catch((e) => {
        owner.log('warn', `proxied connection of ${owner.processId} failed: ${String(e)}`);
        s.destroy();
      });
    },
    (why) => owner.log('warn', `${owner.processId}: ${why}`),
  );
  return { close: () => mux.close() };
}
