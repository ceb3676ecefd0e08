// The seam between a JSON-RPC connection and whatever carries its messages.
// Transports move whole messages (already-parsed objects); framing is theirs.
import type { Disposable, Event } from './event';

export interface CloseInfo {
  /** Why the transport ended, for logs and "connection closed" errors. */
  reason: string;
  /** True if the close was asked for locally (close()), false if the peer/network ended it. */
  local: boolean;
}

export interface MessageTransport extends Disposable {
  /** Sends one message. Must not throw after close (drops silently). */
  send(message: object): void;
  /** Each complete inbound message, parsed. */
  readonly onMessage: Event<unknown>;
  /** Inbound data that is not valid JSON (the connection decides what to answer). */
  readonly onParseError: Event<string>;
  /** Fires once when the transport ends, for any reason. */
  readonly onClose: Event<CloseInfo>;
  readonly closed: boolean;
  close(reason?: string): void;
  /**
   * Optional backpressure signal: bytes queued but not yet handed to the OS.
   * Producers may pause when this grows (ws-style backpressure).
   */
  readonly bufferedAmount?: number;
  /**
   * Optional: stop (true) or resume (false) reading inbound data — backpressure towards a peer
   * that keeps sending (e.g. process output from a server without flow control) while the
   * consumer cannot keep up. Liveness checks must not count the pause as a dead peer.
   */
  pauseIncoming?(paused: boolean): void;
  /** Optional: fires when a previously full send buffer drained. */
  readonly onDrain?: Event<void>;
  /**
   * Optional: the largest inbound message (bytes) this transport accepts; a bigger one ends the
   * connection. Clients use it to fetch big payloads in pieces instead.
   */
  readonly maxMessageBytes?: number;
}
