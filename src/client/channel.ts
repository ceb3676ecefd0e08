// What the client needs from a connection to a server: typed-agnostic requests, notifications
// in, close. Implemented over an RpcConnection (any MessageTransport) and in-process (a
// ServerConnection called directly, see src/transports/in-process.ts).
import { RpcConnection } from '../rpc/connection';
import type { Event } from '../rpc/event';
import type { NotificationMessage } from '../rpc/messages';
import type { CloseInfo, MessageTransport } from '../rpc/transport';
import type { TraceContext } from '../protocol/types';

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
  abort(): void {
    if (this.abortHook) this.abortHook();
    else this.rpc.close('aborted');
  }
}
