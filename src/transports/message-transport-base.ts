// What the stream transports (StdioTransport, WebSocketTransport) share: the MessageTransport
// events, the closed flag, JSON decoding of one inbound message, and the once-only teardown of
// the events. Framing, sending and backpressure stay in each transport.
import { Emitter } from '../rpc/event';
import type { CloseInfo } from '../rpc/transport';

export abstract class MessageTransportBase {
  protected readonly messageEmitter = new Emitter<unknown>();
  protected readonly parseErrorEmitter = new Emitter<string>();
  protected readonly closeEmitter = new Emitter<CloseInfo>();
  protected readonly drainEmitter = new Emitter<void>();
  protected isClosed = false;

  readonly onMessage = this.messageEmitter.event;
  readonly onParseError = this.parseErrorEmitter.event;
  readonly onClose = this.closeEmitter.event;
  readonly onDrain = this.drainEmitter.event;

  get closed(): boolean {
    return this.isClosed;
  }

  /** One inbound message's text: fires onMessage, or onParseError when it is not JSON (the connection answers that). */
  protected deliver(text: string): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      this.parseErrorEmitter.fire(e instanceof Error ? e.message : String(e));
      return;
    }
    this.messageEmitter.fire(value);
  }

  /**
   * Fires onClose, then disposes every emitter. With `wakeDrainWaiters`, onDrain fires once before
   * it is disposed so producers paused on it resume (and then see the transport closed).
   */
  protected emitClosed(info: CloseInfo, wakeDrainWaiters: boolean): void {
    this.closeEmitter.fire(info);
    this.closeEmitter.dispose();
    this.messageEmitter.dispose();
    this.parseErrorEmitter.dispose();
    if (wakeDrainWaiters) this.drainEmitter.fire();
    this.drainEmitter.dispose();
  }
}
