// Connect to Host environments that survive a window reload. The saved environment stays the
// command `ssh … -- host '<exec-server>' --listen stdio://` (ssh-environment.ts); when its remote
// command is that shape (a single program, not `codex exec-server`), the connection is made
// persistent instead: `ssh … -- host '<exec-server>' --detach` finds or starts the CLI's detached
// websocket server on the host (src/cli/detach.ts: 127.0.0.1, random token, idle exit) and
// prints its port and token on stdout; then the extension speaks websocket to it through
// `ssh -W 127.0.0.1:PORT` (ssh's stdio forwarding: no port opens on either machine) and resumes
// its session after a drop or a reload, as for a websocket environment.
// Falls back to the plain stdio command (with a log line saying why) when the executor does not
// know --detach (the reference codex, an older CLI) or the host refuses forwarding
// (AllowTcpForwarding no, a key with no-port-forwarding). The token travels only through ssh's
// stdout and the upgrade request — sent only after the listener proved, on that same connection,
// that it knows the token: never in an argv, never in a log line or error. Free of `vscode`.
import { spawn, type ChildProcess } from 'node:child_process';
import type { ExecClient } from '../../client/api';
import { ExecServerClient, type ChannelFactory, type ClientOptions } from '../../client/client';
import { parseDetachAnswer, proveOverStream, type DetachAnswer } from '../../transports/detach-proof';
import { RpcChannel, type ClientChannel } from '../../rpc/channel';
import { StreamSocket } from '../../transports/stream-socket';
import { connectWebSocketTransport } from '../../transports/websocket-client';
import type { CommandRoute } from '../environments';
import type { EnvironmentConfig } from '../environments';
import { askpassLaunch, interactiveOptions, isSshCommand, withAskpassEnv, type AskpassProvider, type SshLaunch } from './askpass';
import { classifySshFailure, lastLines, runSsh, SshError } from './target';

/** A Connect to Host environment whose connection can be persistent. */
export interface PersistentSshSpec {
  /** The ssh binary (the environment's command). */
  ssh: string;
  /** ssh's options: everything before `--`. */
  options: string[];
  host: string;
  /** The remote program exactly as quoted in the saved command (a single shell word). */
  program: string;
}

/** One shell word as shQuote writes it: plain characters, or '…' with '\'' for a quote. */
const SHELL_WORD = /^(?:[A-Za-z0-9_@%+=:,./-]+|'[^']*(?:'\\''[^']*)*')$/;

/**
 * The persistent form of `config`, or undefined: only the exact shape Connect to Host saves —
 * `<ssh> <options> -- <host> '<program> --listen stdio://'`, the program one word (so
 * `codex exec-server --listen stdio://` and hand-written commands keep the stdio connection).
 */
export function persistentSshSpec(config: EnvironmentConfig): PersistentSshSpec | undefined {
  if (config.kind !== 'command' || !config.command || !config.args) return undefined;
  if (!isSshCommand(config.command)) return undefined;
  const args = config.args;
  const dd = args.indexOf('--');
  if (dd < 0 || args.length !== dd + 3) return undefined;
  const m = /^(.+) --listen stdio:\/\/$/.exec(args[dd + 2]);
  if (!m || !SHELL_WORD.test(m[1])) return undefined;
  return { ssh: config.command, options: args.slice(0, dd), host: args[dd + 1], program: m[1] };
}

/**
 * Why a Connect to Host environment keeps the plain stdio connection (for the log), or undefined
 * when `config` is persistent-capable or not a Connect to Host environment at all.
 */
export function stdioOnlyReason(config: EnvironmentConfig): string | undefined {
  if (persistentSshSpec(config) || config.kind !== 'command' || !isSshCommand(config.command)) return undefined;
  const remote = config.args?.at(-1) ?? '';
  if (/ exec-server --listen stdio:\/\/$/.test(remote)) return 'the executor is `codex exec-server`, which has no detached server: its terminals end with a window reload';
  return undefined;
}

/** Why the persistent connection cannot be used on this host: the stdio command is used instead. */
export class PersistenceUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PersistenceUnavailable';
  }
}

export type DetachedServer = DetachAnswer;

/** The remote command that finds or starts the detached server. */
export function detachCommand(spec: PersistentSshSpec, idleExitSec?: number, sessionTtlSec?: number): string {
  return `${spec.program} --detach${idleExitSec ? ` --idle-exit ${Math.floor(idleExitSec)}` : ''}${sessionTtlSec ? ` --session-ttl ${Math.floor(sessionTtlSec)}` : ''}`;
}

/** Runs `<program> --detach` over ssh: where the detached server listens, and its token. */
export async function ensureDetachedServer(spec: PersistentSshSpec, opts: { idleExitSec?: number; sessionTtlSec?: number; timeoutMs?: number; askpass?: AskpassProvider } = {}): Promise<DetachedServer> {
  const options = opts.askpass ? interactiveOptions(spec.options) : spec.options;
  const r = await runSsh({ sshPath: spec.ssh, askpass: opts.askpass }, [...options, '--', spec.host, detachCommand(spec, opts.idleExitSec, opts.sessionTtlSec)], { timeoutMs: opts.timeoutMs ?? 60_000, target: spec.host });
  const said = lastLines(r.stderr, 3);
  const failure = r.code === 255 ? classifySshFailure(r.stderr, r.code) : undefined;
  if (failure) throw new SshError(failure, spec.host, r.stderr);
  if (/unknown argument: --detach|unexpected argument '--detach'|unrecognized .*--detach|Usage: codex/i.test(r.stderr)) {
    throw new PersistenceUnavailable(`the executor on ${spec.host} does not support --detach (${said})`);
  }
  const answer = parseDetachAnswer(r.stdout);
  if (r.code !== 0 || !answer) {
    throw new Error(`starting the detached exec-server on ${spec.host} failed (exit ${r.code ?? r.signal}${said ? `: ${said}` : ''})`);
  }
  return answer;
}

// sshd's answer to a forwarding its configuration (AllowTcpForwarding no, DisableForwarding) or
// the key (no-port-forwarding, restrict) forbids. "stdio forwarding failed" alone is not it: ssh
// says that too when nothing listens on the port ("open failed: connect failed").
const FORWARDING_REFUSED = /open failed: administratively prohibited/i;
const NOTHING_LISTENS = /open failed: connect failed/i;

/** The detached server went away between --detach and ssh -W (it exited, was killed). */
class ServerGone extends Error {}
/** The listener on the port did not prove it knows the token (another listener took the port since): --detach checks again. */
class NotProven extends ServerGone {}

/** `ssh -W 127.0.0.1:PORT` to the host and a websocket (with the token) over its stdio. */
export async function openForwardedChannel(spec: PersistentSshSpec, server: DetachedServer, opts: { timeoutMs?: number; askpass?: AskpassProvider } = {}): Promise<{ channel: RpcChannel; child: ChildProcess }> {
  // LogLevel INFO (the first -o wins over the config's): ssh says why a channel did not open
  // ("administratively prohibited" vs "connect failed") only at that level.
  const argv = ['-o', 'LogLevel=INFO', ...(opts.askpass ? interactiveOptions(spec.options) : spec.options), '-W', `127.0.0.1:${server.port}`, '--', spec.host];
  const asking = opts.askpass?.open(spec.host);
  const child = spawn(spec.ssh, argv, { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true, env: withAskpassEnv(asking) });
  // Its questions (the login) come before the channel opens; a helper still waiting ends with ssh.
  child.once('exit', () => asking?.dispose());
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    if (stderr.length < 8000) stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const spawnFailed = new Promise<never>((_, reject) => child.once('error', (e) => reject(new SshError('ssh-missing', spec.host, `${spec.ssh}: ${e.message}`))));
  try {
    // Before the token goes out: the listener at the end of this very connection proves it knows
    // it (src/transports/detach-proof.ts). --detach checked the port a moment ago, but the server may
    // have died since and someone else taken the port.
    const proof = await Promise.race([proveOverStream(child.stdout!, child.stdin!, server.port, server.token, opts.timeoutMs ?? 20_000), spawnFailed]);
    if (proof.result === 'unsupported') throw new PersistenceUnavailable(`the detached server on ${spec.host} cannot prove its token (${proof.why})`);
    if (proof.result === 'failed') throw new NotProven(`the listener on the host's 127.0.0.1:${server.port} did not prove it is the detached server (${proof.why}); the token was not sent to it`);
    const socket = new StreamSocket(child.stdout!, child.stdin!);
    socket.on('error', () => undefined);
    const transport = await Promise.race([
      connectWebSocketTransport(`ws://127.0.0.1:${server.port}/`, { token: server.token, connectTimeoutMs: opts.timeoutMs ?? 20_000, stream: socket }),
      spawnFailed,
    ]);
    const channel = new RpcChannel(transport, () => {
      transport.socket.terminate();
      child.kill();
    });
    // The websocket ended (the peer, or terminate()): ssh has nothing left to carry.
    transport.socket.once('close', () => child.kill());
    return { channel, child };
  } catch (e) {
    child.kill();
    asking?.dispose();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
    if (FORWARDING_REFUSED.test(stderr)) throw new PersistenceUnavailable(`${spec.host} refuses TCP forwarding (ssh: ${lastLines(stderr, 2)})`);
    if (NOTHING_LISTENS.test(stderr)) throw new ServerGone(`nothing listens on the host's 127.0.0.1:${server.port} any more (ssh: ${lastLines(stderr, 2)})`);
    if (e instanceof SshError || e instanceof PersistenceUnavailable || e instanceof NotProven) throw e;
    const kind = classifySshFailure(stderr, child.exitCode);
    if (kind) throw new SshError(kind, spec.host, stderr);
    throw new Error(`${e instanceof Error ? e.message : String(e)}${stderr.trim() ? ` (ssh: ${lastLines(stderr, 2)})` : ''}`);
  }
}

/**
 * The connector's route for command environments (environments/manager.ts, CommandRoute): a
 * Connect to Host environment running this project's CLI gets its server that outlives the
 * window; every other ssh command (`codex exec-server`, the fallback when forwarding is refused,
 * one a user wrote) runs as the stdio command with the user's login questions (askpassLaunch),
 * with a log line saying why it is not persistent. Not an ssh command: undefined.
 */
export function persistentSshRoute(log?: ClientOptions['log'], askpass?: () => Promise<AskpassProvider | undefined>, sessionTtlSec?: () => number | undefined): CommandRoute {
  return (config, stdio, opts) => {
    if (!isSshCommand(config.command)) return undefined;
    const prompted = async () => stdioWithAskpass(config.args ?? [], stdio, await askpass?.());
    const spec = persistentSshSpec(config);
    if (!spec) {
      const why = stdioOnlyReason(config);
      if (why) log?.('info', `${config.name}: stdio connection (${why})`);
      return prompted();
    }
    return (async () => connectPersistentSsh(spec, { ...opts, askpass: await askpass?.(), sessionTtlSec: sessionTtlSec?.(), log: (level, message) => log?.(level, `${config.name}: ${message}`), fallback: prompted }))();
  };
}

/** The saved ssh command over its stdio, its login questions the user's; the askpass session ends with the client. */
async function stdioWithAskpass(args: string[], stdio: (launch: { args: string[]; env?: NodeJS.ProcessEnv }) => Promise<ExecClient>, provider: AskpassProvider | undefined): Promise<ExecClient> {
  const launch = askpassLaunch(args, provider);
  try {
    const client = await stdio({ args: launch.args, env: launch.env });
    const sub = client.onDidChangeState((s) => {
      if (s !== 'closed' && s !== 'failed') return;
      sub.dispose();
      launch.dispose();
    });
    return client;
  } catch (e) {
    launch.dispose();
    throw e;
  }
}

/** A command environment's new host channel for the agent relay, and whether its session outlives the channel. */
export type RelayChannelOpener = () => Promise<{ channel: ClientChannel; resumable: boolean }>;

/**
 * How the agent relay (agent/relay-targets.ts RelayRoutes) opens its own connections to a
 * Connect to Host environment, the way the connector does: ssh with the user's login questions
 * (`launch`), and for this project's CLI its detached server through `ssh -W` (`persistent`),
 * whose sessions outlive an ssh drop (resumable) — else the stdio command (not resumable).
 */
export function sshRelayRoutes(askpass?: () => Promise<AskpassProvider | undefined>, sessionTtlSec?: () => number | undefined, log?: (level: 'info' | 'warn', message: string) => void) {
  return {
    launch: async (config: EnvironmentConfig): Promise<SshLaunch | undefined> => (isSshCommand(config.command) ? askpassLaunch(config.args ?? [], await askpass?.()) : undefined),
    persistent: (config: EnvironmentConfig, stdio: () => Promise<ClientChannel>): RelayChannelOpener | undefined => {
      const spec = persistentSshSpec(config);
      if (!spec) return undefined;
      return async () => {
        try {
          return { channel: await openPersistentChannel(spec, { askpass: await askpass?.(), sessionTtlSec: sessionTtlSec?.() }), resumable: true };
        } catch (e) {
          if (!(e instanceof PersistenceUnavailable)) throw e;
          log?.('info', `relay to ${config.name}: no persistent connection (${e.message}); using the stdio command — an ssh drop ends the agent's connection`);
          return { channel: await stdio(), resumable: false };
        }
      };
    },
  };
}

/** Clients connectPersistentSsh returned from the stdio fallback (their sessions end with the window). */
const stdioFallbacks = new WeakSet<object>();
export function isStdioFallback(client: unknown): boolean {
  return typeof client === 'object' && client !== null && stdioFallbacks.has(client);
}

export interface PersistentConnectOptions extends Omit<ClientOptions, 'reconnect'> {
  /** --idle-exit for a server started now (default: the CLI's). */
  idleExitSec?: number;
  /** --session-ttl for a server started now (default: the CLI's 300 s for --detach). */
  sessionTtlSec?: number;
  /** The user answers ssh's login questions (./askpass.ts); without it BatchMode=yes stays. */
  askpass?: AskpassProvider;
  /** The plain stdio connection, used when persistence is unavailable on this host. */
  fallback(reason: string): Promise<ExecClient>;
}

/** A new channel to the host's detached server: `--detach` (finds or starts it), then `ssh -W` to it. */
export async function openPersistentChannel(spec: PersistentSshSpec, opts: { idleExitSec?: number; sessionTtlSec?: number; askpass?: AskpassProvider; log?: ClientOptions['log'] }): Promise<RpcChannel> {
  for (let attempt = 1; ; attempt++) {
    const server = await ensureDetachedServer(spec, { idleExitSec: opts.idleExitSec, sessionTtlSec: opts.sessionTtlSec, askpass: opts.askpass });
    opts.log?.('info', `detached exec-server pid ${server.pid} on the host's 127.0.0.1:${server.port} (${server.started ? 'started' : 'running'}); connecting through ssh -W`);
    try {
      return (await openForwardedChannel(spec, server, { askpass: opts.askpass })).channel;
    } catch (e) {
      // It exited between the two ssh calls (its idle exit), or the port's listener is not it
      // any more: --detach checks again and starts a new one if need be.
      if (!(e instanceof ServerGone) || attempt >= 2) throw e;
      opts.log?.('info', e.message);
    }
  }
}

/**
 * A client of the host's detached server through ssh; reconnects (a new ssh) and resumes its
 * session after a drop. Falls back to `opts.fallback` when the host cannot do it.
 */
export async function connectPersistentSsh(spec: PersistentSshSpec, opts: PersistentConnectOptions): Promise<ExecClient> {
  const factory: ChannelFactory = () => openPersistentChannel(spec, opts);
  try {
    return await ExecServerClient.connect(factory, {
      ...opts,
      reconnect: true,
      // Each attempt logs in with ssh: not ten times a second.
      reconnectDelayMs: opts.reconnectDelayMs ?? 1000,
      recoveryTimeoutMs: opts.recoveryTimeoutMs ?? 30_000,
    });
  } catch (e) {
    if (!(e instanceof PersistenceUnavailable)) throw e;
    opts.log?.('info', `no persistent connection to ${spec.host} (${e.message}); using the stdio connection — its terminals end with a window reload`);
    const client = await opts.fallback(e.message);
    stdioFallbacks.add(client);
    return client;
  }
}
