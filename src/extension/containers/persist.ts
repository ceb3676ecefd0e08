// Container environments whose terminals survive a window reload. The saved environment stays
// `<cli> exec -i … -- <launcher> --listen stdio://`; when the executor is the CLI Connect to
// Container installed (`…/.exec-server/bin/exec-server`, which knows --detach), the connection
// is made persistent instead, as Connect to Host does over ssh (../ssh/persist.ts):
// `<cli> exec -i … -- <launcher> --detach` finds or starts the CLI's detached websocket server
// in the container (127.0.0.1 of the container's network namespace, random token, idle exit)
// and prints its port and token; then `<cli> exec -i … -- node -e <bridge> PORT` carries the
// bytes between its stdio and that port (the exec's stdio is the only way in: no port is
// published), the listener proves it knows the token before it is sent, and the client resumes
// its session after a drop or a reload. A container that stopped ends the session at once with
// its state as the reason (the restart watch in ui/connect.ts reconnects once it runs again);
// an executor without --detach (an older CLI) keeps the plain stdio connection. The token
// travels only through the exec's stdout and the upgrade request. Free of `vscode`.
import { spawn } from 'node:child_process';
import type { ExecClient } from '../../client/api';
import { ExecServerClient, type ChannelFactory, type ClientOptions } from '../../client/client';
import { ErrorCodes, RpcError } from '../../protocol/errors';
import { RpcChannel } from '../../rpc/channel';
import { parseDetachAnswer, proveOverStream, type DetachAnswer } from '../../transports/detach-proof';
import { StreamSocket } from '../../transports/stream-socket';
import { connectWebSocketTransport } from '../../transports/websocket-client';
import { boundedStderr, runCli } from './cli';
import type { CommandRoute, EnvironmentConfig } from '../environments';
import { connectContainer, containerState } from './connect';
import { describeTarget, execArgv, targetOfCommand, type ContainerTarget } from './target';

/** A container environment whose connection can be persistent: its target and the installed launcher. */
export interface PersistentContainerSpec {
  target: ContainerTarget;
  launcher: string;
}

const LAUNCHER = /\/\.exec-server\/bin\/exec-server$/;

/** The persistent form of a saved command, or undefined (another executor: the stdio connection). */
export function persistentContainerSpec(command: string, args: readonly string[]): PersistentContainerSpec | undefined {
  const found = targetOfCommand(command, args);
  if (!found) return undefined;
  const [launcher, listen, url, ...more] = found.command;
  if (more.length || listen !== '--listen' || url !== 'stdio://' || !LAUNCHER.test(launcher ?? '')) return undefined;
  return { target: found.target, launcher };
}

/** Why the persistent connection cannot be used in this container: the stdio command is used. */
export class ContainerPersistenceUnavailable extends Error {}

type Detached = DetachAnswer;

/**
 * The container's state as a reason, when it is not running: thrown as -32600 so the client
 * stops resuming at once (a stopped container's server is gone with it).
 */
async function notRunning(t: ContainerTarget): Promise<RpcError | undefined> {
  const s = await containerState(t).catch(() => undefined);
  if (!s || s.running) return undefined;
  return new RpcError(ErrorCodes.InvalidRequest, `${describeTarget(t)} ${s.gone ? 'was removed' : `stopped (${s.status})`}`);
}

/** `<launcher> --detach` in the container: where the detached server listens, and its token. */
export async function ensureDetachedInContainer(spec: PersistentContainerSpec, opts: { timeoutMs?: number } = {}): Promise<Detached> {
  const t = spec.target;
  const r = await runCli(t.program, execArgv(t, [spec.launcher, '--detach']), { timeoutMs: opts.timeoutMs ?? 60_000 });
  const said = boundedStderr(r.stderr);
  if (r.code !== 0) {
    const gone = await notRunning(t);
    if (gone) throw gone;
  }
  if (/unknown argument: --detach|unexpected argument '--detach'|unrecognized .*--detach/i.test(r.stderr)) {
    throw new ContainerPersistenceUnavailable(`the CLI in ${describeTarget(t)} does not support --detach (${said})`);
  }
  const answer = parseDetachAnswer(r.stdout);
  if (r.code !== 0 || !answer) {
    throw new Error(`starting the detached exec-server in ${describeTarget(t)} failed (${t.program} exited ${r.code ?? r.signal}${said ? `: ${said}` : ''})`);
  }
  return answer;
}

// Runs in the container with its own node (Node >= 20 is what the install required): stdio <->
// 127.0.0.1:PORT, ended when either side ends.
const BRIDGE = `const s=require('net').connect(Number(process.argv[1]),'127.0.0.1');s.on('error',(e)=>{process.stderr.write('bridge: '+e.message+'\\n');process.exit(3)});process.stdin.pipe(s);s.pipe(process.stdout);s.on('close',()=>process.exit(0));process.stdin.on('end',()=>s.end())`;

/** The bridge exec and a websocket (with the token, after the proof) over its stdio. */
async function openBridgedChannel(spec: PersistentContainerSpec, server: Detached, timeoutMs = 20_000): Promise<RpcChannel> {
  const t = spec.target;
  const child = spawn(t.program, execArgv(t, ['node', '-e', BRIDGE, String(server.port)]), { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    if (stderr.length < 8000) stderr += d.toString();
  });
  const spawnFailed = new Promise<never>((_, reject) => child.once('error', (e) => reject(new Error(`cannot run ${t.program}: ${e.message}`))));
  spawnFailed.catch(() => undefined);
  try {
    const proof = await Promise.race([proveOverStream(child.stdout!, child.stdin!, server.port, server.token, timeoutMs), spawnFailed]);
    if (proof.result !== 'proven') throw new Error(`the listener on the container's 127.0.0.1:${server.port} did not prove it is the detached server (${proof.why}); the token was not sent to it`);
    const socket = new StreamSocket(child.stdout!, child.stdin!);
    socket.on('error', () => undefined);
    const transport = await Promise.race([connectWebSocketTransport(`ws://127.0.0.1:${server.port}/`, { token: server.token, connectTimeoutMs: timeoutMs, stream: socket }), spawnFailed]);
    transport.socket.once('close', () => child.kill());
    return new RpcChannel(transport, () => {
      transport.socket.terminate();
      child.kill();
    });
  } catch (e) {
    child.kill();
    const gone = await notRunning(t);
    if (gone) throw gone;
    throw new Error(`${e instanceof Error ? e.message : String(e)}${stderr.trim() ? ` (${t.program}: ${boundedStderr(stderr)})` : ''}`);
  }
}

/** Clients that fell back to the stdio connection (their sessions end with the window). */
const stdioFallbacks = new WeakSet<object>();
export function isContainerStdioFallback(client: unknown): boolean {
  return typeof client === 'object' && client !== null && stdioFallbacks.has(client);
}

/**
 * A client of the container's detached server through `<cli> exec`; reconnects (a new exec)
 * and resumes its session after a drop, a new window resumes it with `resumeSessionId`. Falls
 * back to `fallback` (the stdio connection) when the container's CLI has no --detach.
 */
export async function connectPersistentContainer(spec: PersistentContainerSpec, opts: Omit<ClientOptions, 'reconnect'> & { fallback(reason: string): Promise<ExecClient> }): Promise<ExecClient> {
  const factory: ChannelFactory = async () => {
    const server = await ensureDetachedInContainer(spec);
    opts.log?.('info', `detached exec-server pid ${server.pid} on the container's 127.0.0.1:${server.port} (${server.started ? 'started' : 'running'}); connecting through ${spec.target.program} exec`);
    return openBridgedChannel(spec, server);
  };
  try {
    return await ExecServerClient.connect(factory, { ...opts, reconnect: true, reconnectDelayMs: opts.reconnectDelayMs ?? 500, recoveryTimeoutMs: opts.recoveryTimeoutMs ?? 30_000 });
  } catch (e) {
    if (!(e instanceof ContainerPersistenceUnavailable)) throw e;
    opts.log?.('info', `no persistent connection to ${describeTarget(spec.target)} (${e.message}); using the stdio connection — its terminals end with a window reload`);
    const client = await opts.fallback(e.message);
    stdioFallbacks.add(client);
    return client;
  }
}

/**
 * The connector's route for container environments (environments/manager.ts, CommandRoute):
 * the installed CLI gets its detached server (terminals outlive the window), any other executor
 * the stdio exec whose end names the container's state (./connect.ts).
 */
export function containerRoute(log?: ClientOptions['log']): CommandRoute {
  return (config, _stdio, opts) => {
    const found = config.kind === 'command' && config.command ? targetOfCommand(config.command, config.args ?? []) : undefined;
    if (!found) return undefined;
    const { resumeSessionId, ...stdioOpts } = opts;
    const spec = persistentContainerSpec(config.command!, config.args ?? []);
    if (!spec) return connectContainer(found.target, found.command, stdioOpts);
    const named: ClientOptions['log'] = (level, message) => log?.(level, `${config.name}: ${message}`);
    return connectPersistentContainer(spec, { ...stdioOpts, resumeSessionId, log: named, fallback: () => connectContainer(found.target, found.command, stdioOpts) });
  };
}

/** A container environment whose shells a reload can bring back: persistent, and not fallen back to stdio. */
export function restorableContainer(config: EnvironmentConfig | undefined, client: unknown): boolean {
  return config?.kind === 'command' && !!config.command && !!persistentContainerSpec(config.command, config.args ?? []) && !isContainerStdioFallback(client);
}
