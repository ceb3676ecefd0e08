// The connector: how each kind of environment is reached (the in-process Local server, a
// websocket, a command's stdio or one of the activation's routes), with the options every
// connection gets: its telemetry hook and its answerer of the server's questions (the managed
// proxy's network/policyRequest, asked of the user: src/extension/approval/network-questions.ts).
import { connectCommand, connectInProcess, connectWebSocket } from '../../client/connect';
import type { ExecClient } from '../../client/api';
import type { ServerRequestHandler } from '../../rpc/channel';
import type { ConnectableServer } from '../../transports/in-process';
import type { ClientTelemetry } from '../../telemetry/api';
import { localUnsupported } from './local-platform';
import type { CommandRoute, Connector } from './manager';
import type { EnvironmentConfig } from './store';

export const CLIENT_NAME = 'vscode-exec-server';

/**
 * `telemetry`: the request hook of a new connection to an environment (statistics, spans);
 * `routes`: other ways to reach a command environment, the first that applies wins (a
 * container's exec, Connect to Host's persistent server: given by the activation, environments
 * know neither containers nor ssh); `questions`: the answerer of a new connection's server
 * requests (without one, every network question of a proxied command is denied unseen).
 */
export function createConnector(
  local: { get(): ConnectableServer },
  telemetry?: (environment: string) => ClientTelemetry,
  routes: readonly CommandRoute[] = [],
  questions?: (environment: string) => ServerRequestHandler,
): Connector {
  return {
    connect(config: EnvironmentConfig, token: string | undefined, opts?: { resumeSessionId?: string }): Promise<ExecClient> {
      const t = telemetry?.(config.name);
      const onServerRequest = questions?.(config.name);
      switch (config.kind) {
        case 'local': {
          // Windows: refused in plain words (also said once at activation) rather than a node-pty crash.
          const unsupported = localUnsupported();
          if (unsupported) return Promise.reject(new Error(unsupported));
          return connectInProcess(local.get(), { clientName: CLIENT_NAME, label: 'vscode', telemetry: t, onServerRequest });
        }
        case 'websocket':
          // '' (not undefined): never fall back to the extension host's CODEX_EXEC_SERVER_CONNECTION_TOKEN.
          return connectWebSocket(config.url!, {
            clientName: CLIENT_NAME,
            token: token ?? '',
            resumeSessionId: opts?.resumeSessionId,
            connectTimeoutMs: 10_000,
            initializeTimeoutMs: 10_000,
            telemetry: t,
            onServerRequest,
          });
        case 'command': {
          const stdio = (launch?: { args: string[]; env?: NodeJS.ProcessEnv }) =>
            connectCommand(config.command!, launch?.args ?? config.args ?? [], { clientName: CLIENT_NAME, initializeTimeoutMs: 20_000, telemetry: t, env: launch?.env, onServerRequest });
          for (const route of routes) {
            const routed = route(config, stdio, { clientName: CLIENT_NAME, initializeTimeoutMs: 20_000, telemetry: t, resumeSessionId: opts?.resumeSessionId, onServerRequest });
            if (routed) return routed;
          }
          return stdio();
        }
      }
    },
  };
}
