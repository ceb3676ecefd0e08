// The connection to a container environment: `<cli> exec -i <container> <executor> --listen
// stdio://` as a spawned command (src/transports/command.ts), whose end is explained. When the
// exec ends — the container stopped, was removed, the pod was deleted — the plain stdio transport
// only knows "end of input"; here the close waits (briefly) for the CLI's last stderr lines and
// asks the CLI whether the container still runs, so the terminal and the notification say
// `podman container "web" stopped (exited)` instead. Free of `vscode`.
import type { ExecClient } from '../../client/api';
import { ExecServerClient, type ClientOptions } from '../../client/client';
import { ErrorCodes, RpcError } from '../../protocol/errors';
import { RpcChannel } from '../../rpc/channel';
import { Emitter } from '../../rpc/event';
import type { CloseInfo, MessageTransport } from '../../rpc/transport';
import { spawnCommandTransport } from '../../transports/command';
import { boundedStderr, runCli } from './cli';
import { parseRunning } from './list';
import { describeTarget, execArgv, inspectArgv, type ContainerTarget } from './target';

/** Asks the CLI whether the container runs; undefined when it cannot tell (CLI gone, no answer). */
export async function containerState(t: ContainerTarget, opts: { timeoutMs?: number } = {}): Promise<{ running: boolean; status: string; gone?: boolean } | undefined> {
  try {
    const r = await runCli(t.program, inspectArgv(t), { timeoutMs: opts.timeoutMs ?? 10_000 });
    if (r.code !== 0) {
      // podman: "no such container"; docker: "No such container"; kubectl: "NotFound".
      if (/no such (container|object)|NotFound|not found/i.test(r.stderr)) return { running: false, status: 'removed', gone: true };
      return undefined;
    }
    return parseRunning(t.cli, r.stdout, t.cli === 'kubectl' ? t.container : undefined);
  } catch {
    return undefined;
  }
}

/** Why the exec ended, in words: the container's state, else the CLI's last words. */
export async function explainEnd(t: ContainerTarget, stderrTail: string[]): Promise<string> {
  const s = await containerState(t, { timeoutMs: 5_000 });
  const where = describeTarget(t);
  if (s?.gone) return `${where} was removed`;
  if (s && !s.running) return `${where} stopped (${s.status})`;
  const said = boundedStderr(stderrTail.join('\n'));
  return `${t.program} exec in ${where} ended${said ? ` (${t.program}: ${said})` : ''}`;
}

/** Forwards to `inner`; its close is reported once `explain` resolved (remote ends only). */
class ExplainedTransport implements MessageTransport {
  private readonly closeEmitter = new Emitter<CloseInfo>();
  private done = false;
  readonly onMessage;
  readonly onParseError;
  readonly onClose = this.closeEmitter.event;
  readonly onDrain;

  constructor(
    private readonly inner: MessageTransport,
    explain: (info: CloseInfo) => Promise<string>,
  ) {
    this.onMessage = inner.onMessage;
    this.onParseError = inner.onParseError;
    this.onDrain = inner.onDrain;
    inner.onClose((info) => {
      if (info.local) return this.fire(info);
      void explain(info).then(
        (reason) => this.fire({ reason, local: false }),
        () => this.fire(info),
      );
    });
  }

  private fire(info: CloseInfo): void {
    if (this.done) return;
    this.done = true;
    this.closeEmitter.fire(info);
  }

  get closed(): boolean {
    return this.inner.closed;
  }
  get bufferedAmount(): number | undefined {
    return this.inner.bufferedAmount;
  }
  get maxMessageBytes(): number | undefined {
    return this.inner.maxMessageBytes;
  }
  pauseIncoming(paused: boolean): void {
    this.inner.pauseIncoming?.(paused);
  }
  send(message: object): void {
    this.inner.send(message);
  }
  close(reason?: string): void {
    this.inner.close(reason);
    this.fire({ reason: reason ?? 'closed locally', local: true });
  }
  dispose(): void {
    this.close();
  }
}

/** Starts the executor in the container and connects (one connection: no session resume). */
export async function connectContainer(t: ContainerTarget, executor: readonly string[], opts: ClientOptions = {}): Promise<ExecClient> {
  const argv = execArgv(t, executor);
  const tail: string[] = [];
  let client: ExecServerClient | undefined;
  const { transport, child, exited } = await spawnCommandTransport(t.program, argv, {
    onStderr: (line) => {
      tail.push(line.length > 300 ? `${line.slice(0, 300)}…` : line);
      if (tail.length > 5) tail.shift();
      if (client) client.log('info', `[${t.program}] ${line}`);
      else opts.log?.('info', `[${t.program}] ${line}`);
    },
  });
  const explained = new ExplainedTransport(transport, async () => {
    // The CLI's last words come with its exit (after stdout ended).
    await Promise.race([exited, new Promise((r) => setTimeout(r, 1000))]);
    return explainEnd(t, tail);
  });
  try {
    client = await ExecServerClient.connect(async () => new RpcChannel(explained, () => child.kill('SIGKILL')), { ...opts, reconnect: false });
  } catch (e) {
    transport.close('initialize failed');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 1000))]);
    const s = await containerState(t, { timeoutMs: 5_000 });
    const where = describeTarget(t);
    const why = s?.gone ? `${where} does not exist` : s && !s.running ? `${where} is not running (${s.status})` : `cannot start ${executor[0]} in ${where}`;
    const said = boundedStderr(tail.join('\n'));
    throw new RpcError(e instanceof RpcError ? e.code : ErrorCodes.ConnectionClosed, `${why}: ${e instanceof Error ? e.message : String(e)}${said ? ` (${t.program}: ${said})` : ''}`);
  }
  return client;
}

/**
 * Polls the container's state until it runs again (resolves true), it was removed or `signal`
 * aborted / `timeoutMs` passed (false). The stopped → restarted watcher of the UI.
 */
export async function waitUntilRunning(t: ContainerTarget, opts: { intervalMs?: number; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30 * 60_000);
  while (!opts.signal?.aborted && Date.now() < deadline) {
    const s = await containerState(t);
    if (s?.running) return true;
    if (s?.gone && t.cli !== 'kubectl') return false;
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 2000));
  }
  return false;
}
