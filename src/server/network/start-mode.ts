// What process/start does with its managed-network members (./launch-config.ts). The rule is
// the reference's (codex 0.169, measured; docs/security.md "Managed network"): a start with a
// `sandbox` object and `enforceManagedNetwork: true` runs in managed-proxy mode — network
// unshared, only the proxy reachable — and without a proxy to reach it fails closed (exit 101,
// sandboxDenied), never with the network open. Anything asked for that this engine does not
// enforce is refused (-32600) before anything runs.
import { invalidRequest } from '../../protocol/errors';
import type { SandboxProfile } from '../sandbox/profile';
import { checkProviders } from './credentials';
import type { ManagedNetworkContext, NetworkProxyLaunch } from './launch-config';
import { transparentSupport } from './transparent';

/** The variables a client-run proxy is named by in `env` (the reference's route list). */
export const PROXY_ENV_KEYS = [
  'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'FTP_PROXY', 'WS_PROXY', 'WSS_PROXY',
  'http_proxy', 'https_proxy', 'all_proxy', 'ftp_proxy', 'ws_proxy', 'wss_proxy',
];

/** The reference's text when managed-proxy mode has no proxy to bridge. */
export const NO_PROXY_TO_BRIDGE = 'failed to prepare host proxy routing bridge: managed proxy mode requires proxy environment variables';
/** The reference helper's exit code for that failure (a Rust panic). */
export const FAIL_CLOSED_EXIT = 101;

export type NetworkMode =
  /** Nothing managed: the sandbox's own `network` decides. */
  | { kind: 'plain' }
  /** Managed-proxy mode without a proxy: the command does not run; exit 101, sandboxDenied. */
  | { kind: 'failClosed' }
  /** An executor-local proxy for this process (./proxy-launch.ts), network unshared. */
  | { kind: 'proxy'; launch: NetworkProxyLaunch };

export interface NetworkRequest {
  sandbox: SandboxProfile;
  enforce: boolean;
  networkProxy?: NetworkProxyLaunch;
  managedNetwork?: ManagedNetworkContext;
  env: Record<string, string>;
  tty: boolean;
}

export function networkMode(r: NetworkRequest): NetworkMode {
  if (r.networkProxy) {
    const refuse = (why: string) => invalidRequest(`networkProxy: ${why}; refusing to run without the requested network policy`);
    // The proxy is reachable only from inside a sandbox's own network namespace; without a
    // managed sandbox there is no namespace to put it in (the reference then listens on the host
    // and leaves the child unconfined).
    if (r.sandbox.kind !== 'managed') throw refuse('an executor-local proxy needs a managed sandbox here');
    // node-pty gives a PTY child no descriptor beyond its terminal for the relay.
    if (r.tty) throw refuse('a proxied process cannot be a PTY here (tty: true)');
    if (r.networkProxy.proxy.credentialMasking) checkProviders(r.networkProxy.proxy.credentialProviders);
    // Where the helper cannot run (networkProxyTransparentTcp not advertised), a launch asking for
    // it must not run as if it had it (programs ignoring the proxy variables would get nowhere
    // instead of being proxied).
    if (r.networkProxy.proxy.transparentTcp) {
      const t = transparentSupport();
      if (!t.ok) throw refuse(`transparent TCP is not supported by this exec-server (${t.reason})`);
    }
    return { kind: 'proxy', launch: r.networkProxy };
  }
  const sandboxGiven = !(r.sandbox.kind === 'none' && r.sandbox.type === 'absent');
  // No sandbox object: nothing is confined, and the reference runs the command as it is.
  if (!r.enforce || !sandboxGiven) return { kind: 'plain' };
  if (r.managedNetwork && r.managedNetwork.loopbackPorts.length > 0 && PROXY_ENV_KEYS.some((k) => r.env[k] !== undefined)) {
    throw invalidRequest('managedNetwork (bridging a client-run proxy on the executor host into the sandbox) is not supported by this exec-server; refusing to run without the requested network policy');
  }
  return { kind: 'failClosed' };
}
