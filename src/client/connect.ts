// Opening an ExecServerClient over a concrete transport: in process, websocket, stdio, or a
// spawned command's stdio. The only client module that knows the transports — the client core
// (client.ts) takes any ClientChannel factory — so the layers stay client → transports → rpc.
import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { ErrorCodes, RpcError } from '../protocol/errors';
import { RpcChannel } from '../rpc/channel';
import type { ConnectOptions } from '../server/api';
import { spawnCommandTransport, type CommandTransportOptions } from '../transports/command';
import { InProcessChannel, type ConnectableServer } from '../transports/in-process';
import { StdioTransport } from '../transports/stdio';
import { connectWebSocketTransport, type WebSocketConnectOptions } from '../transports/websocket-client';
import { ExecServerClient, type ChannelFactory, type ClientOptions } from './client';

/** Talks to a server in this process: ServerConnection.request() directly, no JSON. */
export function connectInProcess(server: ConnectableServer, opts: ClientOptions & ConnectOptions = {}): Promise<ExecServerClient> {
  return ExecServerClient.connect(async () => new InProcessChannel(server, { label: opts.label, terminateOnClose: opts.terminateOnClose }), opts);
}

/**
 * Connects over a websocket; the token defaults to $CODEX_EXEC_SERVER_CONNECTION_TOKEN.
 * Reconnects and resumes the session after a drop unless `reconnect: false`.
 */
export function connectWebSocket(url: string, opts: ClientOptions & WebSocketConnectOptions = {}): Promise<ExecServerClient> {
  const token = opts.token ?? process.env.CODEX_EXEC_SERVER_CONNECTION_TOKEN ?? undefined;
  const factory: ChannelFactory = async () => {
    const t = await connectWebSocketTransport(url, { ...opts, token: token || undefined });
    return new RpcChannel(t, () => t.socket.terminate());
  };
  return ExecServerClient.connect(factory, { ...opts, reconnect: opts.reconnect ?? true });
}

/** JSON lines over a stream pair (one connection: no reconnect). */
export function connectStdio(streams: { input: Readable; output: Writable }, opts: ClientOptions = {}): Promise<ExecServerClient> {
  let used = false;
  return ExecServerClient.connect(async () => {
    if (used) throw new RpcError(ErrorCodes.ConnectionClosed, 'a stdio connection cannot be reopened');
    used = true;
    return new RpcChannel(new StdioTransport(streams.input, streams.output));
  }, { ...opts, reconnect: false });
}

/** Spawns `command args...` (e.g. ssh host npx exec-server --listen stdio://) and talks over its stdio. */
export async function connectCommand(
  command: string,
  args: string[],
  opts: ClientOptions & Omit<CommandTransportOptions, 'onStderr'> = {},
): Promise<ExecServerClient> {
  let client: ExecServerClient | undefined;
  const early: string[] = [];
  const { transport, child } = await spawnCommandTransport(command, args, {
    ...opts,
    onStderr: (line) => {
      if (client) return client.log('info', `[${command}] ${line}`);
      opts.log?.('info', `[${command}] ${line}`);
      // Only the last lines go into the error (the command, e.g. ssh, prints what the host says:
      // a host printing without end must not fill memory until initialize times out).
      early.push(line.length > 300 ? `${line.slice(0, 300)}…` : line);
      if (early.length > 5) early.shift();
    },
  });
  const notServer = notAnExecServer(command, child);
  try {
    client = await Promise.race([ExecServerClient.connect(async () => new RpcChannel(transport, () => child.kill('SIGKILL')), { ...opts, reconnect: false }), notServer.failed]);
    notServer.stop();
  } catch (e) {
    notServer.stop();
    transport.close('initialize failed');
    // Its last words (ssh's "Permission denied", what the host said) often come after stdout
    // ended — the reason the initialize failed: wait (briefly) for the end of stderr.
    await stderrEnd(child, 1000);
    const detail = early.length ? ` (stderr: ${early.slice(-5).join(' | ')})` : '';
    throw new RpcError(e instanceof RpcError ? e.code : ErrorCodes.ConnectionClosed, `${e instanceof Error ? e.message : String(e)}${detail}`);
  }
  return client;
}

/**
 * Rejects as soon as the command shows it is not an exec-server — its first non-blank stdout
 * line is not a JSON-RPC message, quoted (a shell's greeting, a usage text), or it exits — instead
 * of waiting for the initialize timeout. stop() once initialized.
 */
function notAnExecServer(command: string, child: ChildProcess): { failed: Promise<never>; stop(): void } {
  let stop = () => undefined as void;
  const failed = new Promise<never>((_, reject) => {
    let seen = '';
    const onData = (d: Buffer | string) => {
      seen += d.toString();
      for (;;) {
        const nl = seen.indexOf('\n');
        if (nl < 0 && seen.length < 4096) return;
        const line = (nl < 0 ? seen : seen.slice(0, nl)).replace(/\r$/, '');
        seen = nl < 0 ? '' : seen.slice(nl + 1);
        if (line.trim() === '') continue;
        stop();
        let message: unknown;
        try {
          message = JSON.parse(line);
        } catch {
          message = undefined;
        }
        if (typeof message === 'object' && message !== null && ('jsonrpc' in message || 'id' in message || 'method' in message)) return;
        const quoted = JSON.stringify(line.length > 200 ? `${line.slice(0, 200)}…` : line);
        return reject(new RpcError(ErrorCodes.ConnectionClosed, `${command} is not an exec-server: it printed ${quoted} where a JSON-RPC answer to initialize was expected`));
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      reject(new RpcError(ErrorCodes.ConnectionClosed, `${command} exited (${signal ?? `code ${code}`}) before answering initialize`));
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
    stop = () => {
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
    };
  });
  failed.catch(() => undefined);
  return { failed, stop: () => stop() };
}

/** Resolves when the child's stderr has ended (its last lines were delivered), or after `ms`. */
function stderrEnd(child: ChildProcess, ms: number): Promise<void> {
  const err = child.stderr;
  if (!err || err.readableEnded || err.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      err!.off('end', done);
      err!.off('close', done);
      resolve();
    }
    err.once('end', done);
    err.once('close', done);
  });
}
