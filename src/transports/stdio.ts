// Newline-delimited JSON over a Readable/Writable pair (stdio of a process, a child's pipes).
// One message per `\n` line; CRLF and blank lines are tolerated; partial lines are buffered
// up to a limit so a peer that never sends `\n` cannot exhaust memory.
import type { Readable, Writable } from 'node:stream';
import { MAX_MESSAGE_BYTES } from '../protocol/limits';
import type { MessageTransport } from '../rpc/transport';
import { encodeMessage } from './encode';
import { MessageTransportBase } from './message-transport-base';

export interface StdioTransportOptions {
  /** Maximum bytes of one line (one message). Default MAX_MESSAGE_BYTES (64 MiB), like the websocket maxPayload. */
  maxLineBytes?: number;
  /** End the writable when the transport closes (default true). */
  endOutputOnClose?: boolean;
  /**
   * Lines handed on per chunk before the rest waits for the next event-loop turn (0: no limit,
   * the default). A server's reader passes SERVER_MESSAGES_PER_SLICE, as its websocket reader
   * does: a 64 KiB chunk holds hundreds of pipelined requests.
   */
  messagesPerTurn?: number;
}

export class StdioTransport extends MessageTransportBase implements MessageTransport {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly maxLineBytes: number;
  private readonly cleanup: (() => void)[] = [];
  private paused = false;
  /**
   * The rest of a chunk read before a pause: pausing the stream stops its next chunks, not the
   * lines of this one, which wait here (as the websocket reader holds a frame's tail) until the
   * resume, ahead of anything read later.
   */
  private held: Buffer | undefined;
  /** An end of input that came while lines were held: it closes the transport once they are delivered. */
  private endPending = false;
  private drainScheduled = false;
  private readonly messagesPerTurn: number;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly options: StdioTransportOptions = {},
  ) {
    super();
    this.maxLineBytes = options.maxLineBytes ?? MAX_MESSAGE_BYTES;
    this.messagesPerTurn = options.messagesPerTurn ?? 0;
    const onData = (d: Buffer | string) => {
      const data = typeof d === 'string' ? Buffer.from(d) : d;
      // Behind held lines (a stream that delivers after pause()): queued, in order.
      if (this.held) this.held = Buffer.concat([this.held, data]);
      else this.handleData(data);
    };
    const onEnd = () => {
      if (this.held) this.endPending = true;
      else this.finish('end of input', false);
    };
    const onInputError = (e: Error) => this.finish(`input error: ${e.message}`, false);
    const onOutputError = (e: Error) => this.finish(`output error: ${e.message}`, false);
    const onDrain = () => this.drainEmitter.fire();
    input.on('data', onData);
    input.on('end', onEnd);
    input.on('close', onEnd);
    input.on('error', onInputError);
    output.on('error', onOutputError);
    output.on('drain', onDrain);
    this.cleanup.push(() => {
      input.off('data', onData);
      input.off('end', onEnd);
      input.off('close', onEnd);
      input.off('error', onInputError);
      output.off('drain', onDrain);
      // keep a no-op error listener on output: a late EPIPE must not crash the process
    });
  }

  get maxMessageBytes(): number {
    return this.maxLineBytes;
  }

  pauseIncoming(paused: boolean): void {
    if (this.isClosed) return;
    this.paused = paused;
    if (paused) this.input.pause();
    else if (this.held || this.endPending) this.scheduleDrain();
    else this.input.resume();
  }

  /**
   * Delivers the held lines in a later turn (after a resume's caller has returned, as the
   * stream's own resume does; after a full slice, once other work had its turn), then reads on.
   */
  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      if (this.isClosed || this.paused) return;
      const held = this.held;
      this.held = undefined;
      if (held) this.handleData(held, true);
      // Closed, paused, or a full slice again (its own drain is scheduled).
      if (this.isClosed || this.paused || this.held) return;
      if (this.endPending) this.finish('end of input', false);
      else this.input.resume();
    });
  }

  /** Bytes queued in the writable and not yet flushed to the OS. */
  get bufferedAmount(): number {
    return this.output.writableLength ?? 0;
  }

  send(message: object): void {
    if (this.isClosed || this.output.destroyed || this.output.writableEnded) return;
    const data = encodeMessage(message, '\n');
    if (!Array.isArray(data)) this.output.write(data);
    // Head, payload buffer, tail (encode.ts): each written as it is, in order.
    else for (const part of data) this.output.write(part);
  }

  close(reason = 'closed locally'): void {
    this.finish(reason, true);
  }

  /**
   * The peer is gone though its stream has not ended (the command behind it exited first, or
   * left its output to a child): a remote end, as an end of input is, so whoever explains or
   * recovers from a remote end does so here too.
   */
  peerGone(reason: string): void {
    this.finish(reason, false);
  }

  dispose(): void {
    this.close();
  }

  /** `owned`: `data` is this transport's own copy (held lines), so what is held again is a view of it. */
  private handleData(data: Buffer, owned = false): void {
    let start = 0;
    let handed = 0;
    while (!this.isClosed) {
      const nl = data.indexOf(0x0a, start);
      if (nl < 0) break;
      const part = data.subarray(start, nl);
      start = nl + 1;
      if (this.pendingBytes + part.length > this.maxLineBytes) {
        this.lineTooLong();
        return;
      }
      let line: Buffer;
      if (this.pending.length) {
        this.pending.push(part);
        line = Buffer.concat(this.pending);
        this.pending = [];
        this.pendingBytes = 0;
      } else {
        line = part;
      }
      this.handleLine(line);
      if (this.isClosed) return;
      if (this.paused) {
        if (start < data.length) this.held = this.keep(data.subarray(start), owned);
        return;
      }
      if (++handed === this.messagesPerTurn && start < data.length) {
        // A full slice: the rest waits for the next turn, and the stream stops meanwhile.
        this.held = this.keep(data.subarray(start), owned);
        this.input.pause();
        this.scheduleDrain();
        return;
      }
    }
    if (this.isClosed || start >= data.length) return;
    const rest = data.subarray(start);
    if (this.pendingBytes + rest.length > this.maxLineBytes) {
      this.lineTooLong();
      return;
    }
    this.pending.push(this.keep(rest, owned));
    this.pendingBytes += rest.length;
  }

  /** Bytes kept past this chunk: copied out of a stream's chunk (the stream may reuse its buffer), a view of our own. */
  private keep(bytes: Buffer, owned: boolean): Buffer {
    return owned ? bytes : Buffer.from(bytes);
  }

  private handleLine(line: Buffer): void {
    let text = line.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return;
    this.deliver(text);
  }

  private lineTooLong(): void {
    this.pending = [];
    this.pendingBytes = 0;
    const reason = `message line exceeds the limit of ${this.maxLineBytes} bytes`;
    // Let the connection tell the peer why (an error response) before the stream ends.
    this.parseErrorEmitter.fire(`${reason}; closing the connection`);
    this.finish(reason, false);
  }

  private finish(reason: string, local: boolean): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const c of this.cleanup) c();
    this.output.on('error', () => {});
    if (this.options.endOutputOnClose !== false && !this.output.writableEnded) {
      try {
        this.output.end();
      } catch {
        /* already broken */
      }
    }
    this.emitClosed({ reason, local }, false);
  }
}
