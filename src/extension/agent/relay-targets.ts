// The relay target of a configured environment (relay.ts RelayTarget): each agent connection
// gets a FRESH connection to the environment's server, opened the way the environment is
// configured — a websocket environment's URL with its token, a command environment's command
// (Connect to Host's `ssh … --listen stdio://`, a container's exec) — never the extension's own
// connection, whose session (terminals, files) is the user's. `routes` (given by the activation:
// agents know nothing of ssh) run an ssh command with the user's login questions and reach
// Connect to Host's detached server, whose sessions outlive a dropped link (RelayTarget.resumable):
// the same ways the connector reaches that environment.
import type { ClientChannel } from '../../rpc/channel';
import { RpcChannel } from '../../rpc/channel';
import { spawnCommandTransport } from '../../transports/command';
import { connectWebSocketTransport } from '../../transports/websocket-client';
import type { EnvironmentConfig } from '../environments';
import type { RelayTarget } from './relay';

/** stderr lines of a command kept for the error when the command ends before it served. */
const STDERR_LINES = 5;

/** A command run by the relay: its args and environment, and the end of what they hold (an askpass session). */
export interface CommandLaunch {
  args: string[];
  env: NodeJS.ProcessEnv | undefined;
  dispose(): void;
}

/** Other ways to reach a command environment than running its command as saved (ssh/persist.ts sshRelayRoutes). */
export interface RelayRoutes {
  /** How the command is run (ssh: BatchMode off, the user answers its login questions); undefined: as saved. */
  launch?(config: EnvironmentConfig): Promise<CommandLaunch | undefined>;
  /** Another opener for `config` (a server that outlives the link), falling back to `command` itself; undefined: the command. */
  persistent?(config: EnvironmentConfig, command: () => Promise<ClientChannel>): (() => Promise<{ channel: ClientChannel; resumable: boolean }>) | undefined;
}

export function relayTargetOf(
  config: EnvironmentConfig,
  token: () => Promise<string | undefined>,
  log?: (level: 'info' | 'warn', message: string) => void,
  routes: RelayRoutes = {},
): RelayTarget {
  switch (config.kind) {
    case 'local':
      throw new Error('Local has no relay: its agent endpoint serves its own engine');
    case 'websocket':
      return {
        name: config.name,
        open: async (): Promise<ClientChannel> => {
          // '' (not undefined): never the extension host's CODEX_EXEC_SERVER_CONNECTION_TOKEN.
          const t = await connectWebSocketTransport(config.url!, { token: (await token()) ?? '', connectTimeoutMs: 10_000 });
          return new RpcChannel(t, () => t.socket.terminate());
        },
        // A websocket server keeps a dropped connection's session (30 s on the reference).
        resumable: () => true,
      };
    case 'command': {
      const command = async (): Promise<ClientChannel> => {
        const last: string[] = [];
        const launch = await routes.launch?.(config);
        let transport, child;
        try {
          ({ transport, child } = await spawnCommandTransport(config.command!, launch?.args ?? config.args ?? [], {
            env: launch?.env,
            onStderr: (line) => {
              last.push(line.length > 300 ? `${line.slice(0, 300)}…` : line);
              if (last.length > STDERR_LINES) last.shift();
              log?.('info', `[relay to ${config.name}] ${line}`);
            },
          }));
        } catch (e) {
          launch?.dispose();
          throw e;
        }
        child.once('exit', (code, signal) => {
          launch?.dispose();
          if (code !== 0) log?.('warn', `relay to ${config.name}: ${config.command} ended (${code ?? signal})${last.length ? `: ${last.join(' | ')}` : ''}`);
        });
        const c = child;
        return new RpcChannel(transport, () => c.kill('SIGKILL'));
      };
      const persistent = routes.persistent?.(config, command);
      if (!persistent) return { name: config.name, open: command };
      const resumable = new WeakSet<ClientChannel>();
      return {
        name: config.name,
        open: async () => {
          const { channel, resumable: r } = await persistent();
          if (r) resumable.add(channel);
          return channel;
        },
        resumable: (ch) => resumable.has(ch),
      };
    }
  }
}
