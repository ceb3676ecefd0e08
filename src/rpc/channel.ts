// The channel contract: what a client needs from a connection to a server (type-agnostic
// requests, notifications in, close). It lives in src/rpc so that both sides depend on it and
// not on each other: src/client consumes channels, src/transports provides them. Implemented
// over an RpcConnection (any MessageTransport, here) and in-process (a ServerConnection called
// directly, src/transports/in-process.ts).
import { RpcConnection } from './connection';
import type { Event } from './event';
import type { NotificationMessage } from './messages';
import type { CloseInfo, MessageTransport } from './transport';
import type { TraceContext } from '../protocol/types';

/**
 * Answers a request of the server to its client (server → client; network/policyRequest).
 * `signal` aborts when the answer is no longer wanted (the link closed).
 */
export type ServerRequestHandler = (method: string, params: unknown, signal: AbortSignal) => Promise<unknown>;

export interface ClientChannel {
  /** `trace`: the W3C trace context the request carries (its `trace` member on the wire). */
  request(method: string, params: unknown, trace?: TraceContext): Promise<unknown>;
  notify(method: string, params: unknown): void;
  readonly onNotification: Event<NotificationMessage>;
  readonly onClose: Event<CloseInfo>;
  readonly closed: boolean;
  /** Orderly close (local). */
  close(reason?: string): void;
  /** Test/diagnostic hook: drop the link as if the network failed (non-local close). */
  abort?(): void;
  /** Largest inbound message the link accepts (bytes); undefined when unlimited (in-process). */
  readonly maxMessageBytes?: number;
  /** Stop/resume reading inbound messages (see MessageTransport.pauseIncoming); absent in-process. */
  pauseIncoming?(paused: boolean): void;
  /** Who answers the server's requests on this link; without one they get -32601 (method not found). */
  setRequestHandler(handler: ServerRequestHandler | undefined): void;
}

export class RpcChannel implements ClientChannel {
  readonly rpc: RpcConnection;
  constructor(
    readonly transport: MessageTransport,
    private readonly abortHook?: () => void,
  ) {
    this.rpc = new RpcConnection(transport);
  }
  get onNotification(): Event<NotificationMessage> {
    return this.rpc.onNotification;
  }
  get onClose(): Event<CloseInfo> {
    return this.rpc.onClose;
  }
  get closed(): boolean {
    return this.rpc.closed;
  }
  get maxMessageBytes(): number | undefined {
    return this.transport.maxMessageBytes;
  }
  request(method: string, params: unknown, trace?: TraceContext): Promise<unknown> {
    return this.rpc.request(method, params, trace ? { trace } : undefined);
  }
  notify(method: string, params: unknown): void {
    this.rpc.notify(method, params);
  }
  close(reason?: string): void {
    this.rpc.close(reason);
  }
  pauseIncoming(paused: boolean): void {
    this.transport.pauseIncoming?.(paused);
  }
  setRequestHandler(handler: ServerRequestHandler | undefined): void {
    if (!handler) return this.rpc.setRequestHandler(undefined);
    const gone = new AbortController();
    this.rpc.onClose(() => gone.abort());
    this.rpc.setRequestHandler((method, params) => handler(method, params, gone.signal));
  }
  abort(): void {
    if (this.abortHook) this.abortHook();
    else this.rpc.close('aborted');
  }
}
