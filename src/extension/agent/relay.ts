// The relay behind a remote environment's agent endpoint: each agent connection (already
// gated: endpoint.ts wraps this in the same GatedServerConnection as Local) gets its OWN
// connection and server session on the environment's host, opened through the extension's
// connector for that environment (e.g. ssh). Requests are forwarded in arrival order — also
// those pipelined before the host link is up, which wait for it (they passed the gate first).
// What the host sends back is forwarded only for what this connection started: a process
// notification for a process id it did not start, a watch it did not open or an http body it
// did not ask for is dropped (a host cannot inject events into the agent's view). The agent
// never resumes a host session (resumeSessionId is dropped: a fresh session per connection).
import type { NotificationMap, NotificationMethod } from '../../protocol/types';
import { ErrorCodes, Messages, RpcError } from '../../protocol/errors';
import type { ClientChannel } from '../../rpc/channel';
import type { NotificationSink, ServerConnection } from '../../server/api';
import type { ConnectableServer } from '../../transports/in-process';

/** Where an environment's agent connections are relayed to. */
export interface RelayTarget {
  /** The environment's name, shown in questions and logs ("→ devbox"). */
  readonly name: string;
  /** Opens a new connection to the host's server (not yet initialized). */
  open(): Promise<ClientChannel>;
}

const PROCESS_NOTIFICATIONS = new Set(['process/output', 'process/exited', 'process/closed']);

/** Relays each agent connection to its own connection to `target`. */
/**
 * `onHostLost`: the host link of a connection dropped. The relay does not resume host sessions
 * yet, so the caller ends the agent's connection (its requests fail, nothing hangs).
 */
export function relayServer(target: RelayTarget, log?: (level: 'debug' | 'info' | 'warn', message: string) => void, onHostLost?: (reason: string) => void): ConnectableServer {
  return { connect: (sink) => new RelayConnection(target, sink, log, onHostLost) };
}

class RelayConnection implements ServerConnection {
  private channel: Promise<ClientChannel> | undefined;
  private closed = false;
  /** Process ids whose start this connection forwarded (notifications for others are forged). */
  private readonly processes = new Set<string>();
  private readonly watches = new Set<string>();
  private readonly httpRequests = new Set<string>();

  constructor(
    private readonly target: RelayTarget,
    private readonly sink: NotificationSink,
    private readonly log?: (level: 'debug' | 'info' | 'warn', message: string) => void,
    private readonly onHostLost?: (reason: string) => void,
  ) {}

  /** The host link, opened on first use; every caller chains on the same promise, so order holds. */
  private link(): Promise<ClientChannel> {
    this.channel ??= this.target.open().then((ch) => {
      if (this.closed) {
        ch.close('agent connection closed');
        throw new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed);
      }
      ch.onNotification((n) => this.fromHost(n.method, n.params));
      ch.onClose((info) => {
        if (this.closed) return;
        this.log?.('warn', `relay to ${this.target.name}: the host connection closed (${info.reason})`);
        this.onHostLost?.(`the connection to ${this.target.name} was lost (${info.reason})`);
      });
      return ch;
    });
    return this.channel;
  }

  request<M extends keyof import('../../protocol/types').RequestMap>(method: M, params: import('../../protocol/types').ParamsOf<M>): Promise<import('../../protocol/types').ResultOf<M>> {
    return this.requestUntyped(method, params) as Promise<import('../../protocol/types').ResultOf<M>>;
  }

  requestUntyped(method: string, params: unknown): Promise<unknown> {
    if (this.closed) return Promise.reject(new RpcError(ErrorCodes.ConnectionClosed, Messages.connectionClosed));
    let sent = params;
    const p = params && typeof params === 'object' ? (params as Record<string, unknown>) : undefined;
    if (method === 'initialize' && p && 'resumeSessionId' in p) {
      // A fresh host session per agent connection: never one of the extension's own.
      const { resumeSessionId: _dropped, ...rest } = p;
      sent = rest;
    }
    // Registered before forwarding: the host may notify output before it answers the start.
    if (method === 'process/start' && p && typeof p.processId === 'string') this.processes.add(p.processId);
    if (method === 'fs/watch' && p && typeof p.watchId === 'string') this.watches.add(p.watchId);
    if (method === 'http/request' && p && typeof p.requestId === 'string') this.httpRequests.add(p.requestId);
    return this.link().then((ch) => ch.request(method, sent));
  }

  notification(method: string, params: unknown): boolean {
    if (method !== 'initialized') return false;
    void this.link().then(
      (ch) => ch.notify(method, params),
      () => undefined,
    );
    return true;
  }

  private fromHost(method: string, params: unknown): void {
    if (this.closed) return;
    const p = (params ?? {}) as Record<string, unknown>;
    const mine = PROCESS_NOTIFICATIONS.has(method)
      ? this.processes.has(String(p.processId))
      : method === 'fs/changed'
        ? this.watches.has(String(p.watchId))
        : method === 'http/request/bodyDelta'
          ? this.httpRequests.has(String(p.requestId))
          : false;
    if (!mine) {
      this.log?.('warn', `relay to ${this.target.name}: dropped a ${method} notification for something this agent connection did not start`);
      return;
    }
    if (method === 'http/request/bodyDelta' && p.done === true) this.httpRequests.delete(String(p.requestId));
    this.sink.notify(method as NotificationMethod, params as NotificationMap[NotificationMethod]);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    // The host session ends with its connection (the host terminates its processes after its TTL).
    void this.channel?.then(
      (ch) => ch.close('agent connection closed'),
      () => undefined,
    );
  }
}
