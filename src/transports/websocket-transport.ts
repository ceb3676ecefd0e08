// A MessageTransport over one `ws` WebSocket (either side): one JSON message per text frame,
// binary frames holding UTF-8 JSON accepted too, and binary process/output frames
// (./output-frame.ts) sent by sendOutputFrame and decoded into process/output messages.
import type WebSocket from 'ws';
import type { OutputStream } from '../protocol/types';
import type { MessageTransport } from '../rpc/transport';
import { encodeMessage } from './encode';
import { MessageTransportBase } from './message-transport-base';
import { bytesMemberOf } from '../rpc/bytes-members';
import { decodeFrame, encodeOutputFrame, encodeOutputFrameHeader, encodeResponseBytesFrame, encodeResponseBytesHeader, isOutputFrame } from './output-frame';
import { pooledTextFrame, sendDirect, sendDirectText, sendMaskedDirect, type PooledTextFrame } from './ws-direct-frame';
import { holdChunk, releaseChunk } from '../server/process/read-blocks';

export interface WebSocketTransportOptions {
  /** bufferedAmount above which the transport reports congestion (default 4 MiB). */
  highWaterMark?: number;
  /** How often to check whether a congested socket drained (default 20 ms). */
  drainPollMs?: number;
  /**
   * Client side: ping the peer this often and terminate the socket if the previous ping got
   * no pong (a half-open connection is then noticed and recovery can start). 0 = off.
   */
  keepaliveMs?: number;
  /** The socket's maxPayload, reported as maxMessageBytes (the ws option itself is set at construction). */
  maxMessageBytes?: number;
}

export const DEFAULT_HIGH_WATER_MARK = 4 * 1024 * 1024;

export class WebSocketTransport extends MessageTransportBase implements MessageTransport {
  private corked = false;
  private closingLocally = false;
  private drainTimer: ReturnType<typeof setInterval> | undefined;
  readonly highWaterMark: number;

  constructor(
    readonly socket: WebSocket,
    private readonly options: WebSocketTransportOptions = {},
  ) {
    super();
    this.highWaterMark = options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
    socket.on('message', (data, isBinary) => this.handleFrame(data, isBinary));
    socket.on('close', (code, reason) => {
      const why = reason.length ? reason.toString() : `websocket closed (code ${code})`;
      this.finish(why, this.closingLocally);
    });
    socket.on('error', (e) => this.finish(`websocket error: ${e.message}`, false));
    if (socket.readyState >= 2 /* CLOSING */) this.finish('websocket already closed', false);
    if (options.keepaliveMs && options.keepaliveMs > 0) this.startKeepalive(options.keepaliveMs);
  }

  private keepaliveTimer: ReturnType<typeof setInterval> | undefined;
  private incomingPaused = false;

  pauseIncoming(paused: boolean): void {
    if (paused === this.incomingPaused || this.isClosed) return;
    this.incomingPaused = paused;
    if (paused) this.socket.pause();
    else this.socket.resume();
  }
  private startKeepalive(ms: number): void {
    let answered = true;
    this.socket.on('pong', () => (answered = true));
    this.keepaliveTimer = setInterval(() => {
      if (this.isClosed) return;
      // Paused on purpose: the pong sits unread behind the held data, the peer is not dead.
      if (this.incomingPaused) {
        answered = true;
        return;
      }
      if (!answered) {
        this.socket.terminate();
        this.finish(`no pong from the peer within ${ms} ms`, false);
        return;
      }
      answered = false;
      try {
        this.socket.ping();
      } catch {
        /* closing */
      }
    }, ms);
    this.keepaliveTimer.unref?.();
  }

  get maxMessageBytes(): number | undefined {
    return this.options.maxMessageBytes;
  }
  get bufferedAmount(): number {
    return this.socket.bufferedAmount;
  }
  /** True while more than highWaterMark bytes wait to be sent. */
  isCongested(): boolean {
    const congested = !this.isClosed && this.socket.bufferedAmount > this.highWaterMark;
    if (congested) this.watchDrain();
    return congested;
  }

  send(message: object): void {
    if (this.isClosed || this.socket.readyState !== 1 /* OPEN */) return;
    this.corkForThisTurn();
    // A result carrying raw bytes (only for a client that negotiated binaryOutput): a kind 2 frame,
    // its bytes written as they are behind the header (./ws-direct-frame.ts) where possible; a
    // request carrying them (fs/writeBlock to a server that enabled binaryOutput): a kind 3
    // frame, masked in one buffer.
    if (bytesMemberOf(message)) {
      const { head, bytes } = encodeResponseBytesHeader(message);
      if (sendDirect(this.socket, head, bytes) || sendMaskedDirect(this.socket, head, bytes)) return;
      return void this.socket.send(encodeResponseBytesFrame(message), { binary: true });
    }
    // A spliced message (process output as base64) is written into a recycled frame where possible.
    let frame: PooledTextFrame | undefined;
    const data = encodeMessage(message, '', (bytes) => (frame = pooledTextFrame(this.socket, bytes))?.body);
    if (frame) return void (frame as PooledTextFrame).send();
    // A spliced frame is a Buffer of JSON text: still a text frame on the wire.
    if (typeof data === 'string') this.socket.send(data);
    else if (!Array.isArray(data)) this.socket.send(data, { binary: false });
    // Head, payload buffer, tail: written as they are where possible, joined (one copy) otherwise.
    else if (!sendDirectText(this.socket, data)) this.socket.send(Buffer.concat(data), { binary: false });
  }

  /**
   * One process/output event as a binary frame (only for a peer that opted in to binaryOutput).
   * The payload goes to the socket as it is, behind a small header buffer (./ws-direct-frame.ts);
   * `ws.send` of a copy when that is not possible (client side, ws busy compressing).
   */
  sendOutputFrame(processId: string, seq: number, stream: OutputStream, data: Uint8Array): void {
    if (this.isClosed || this.socket.readyState !== 1 /* OPEN */) return;
    this.corkForThisTurn();
    // `data` may be in a recycled read block (../server/process/read-blocks.ts): the socket
    // keeps referring to it until the write completed, so it is held until then.
    holdChunk(data);
    if (sendDirect(this.socket, encodeOutputFrameHeader(processId, seq, stream), data, () => releaseChunk(data))) return;
    releaseChunk(data);
    // A copy: nothing refers to `data` after this call.
    this.socket.send(encodeOutputFrame(processId, seq, stream, data), { binary: true });
  }

  /**
   * Every frame sent in one event-loop turn leaves in one writev: replies to a batch of pipelined
   * requests cost one syscall instead of one each, and so do the output frames of all the pipe
   * reads libuv makes in one poll phase. Uncorked in setImmediate (right after that poll phase)
   * rather than nextTick (after each read's callback): streaming 128 MiB then took 5–10 % less
   * wall time on this 2-core machine (one writev per 64 KiB read before).
   */
  private corkForThisTurn(): void {
    if (this.corked) return;
    const raw = (this.socket as unknown as { _socket?: import('node:net').Socket })._socket;
    if (!raw || typeof raw.cork !== 'function') return;
    this.corked = true;
    raw.cork();
    setImmediate(() => {
      this.corked = false;
      raw.uncork();
    });
  }

  close(reason = 'closed locally'): void {
    if (this.isClosed) return;
    this.closingLocally = true;
    try {
      // Close reasons are limited to 123 bytes by the protocol.
      this.socket.close(1000, Buffer.from(reason).subarray(0, 120).toString());
    } catch {
      this.socket.terminate();
    }
    // Do not wait for the peer's close frame to settle our side.
    this.finish(reason, true);
    const s = this.socket;
    setTimeout(() => s.terminate(), 2000).unref();
  }

  dispose(): void {
    this.close();
  }

  /** ws has no drain event: poll bufferedAmount while congested. */
  private watchDrain(): void {
    if (this.drainTimer) return;
    this.drainTimer = setInterval(() => {
      if (this.isClosed) return this.stopDrainWatch();
      if (this.socket.bufferedAmount <= this.highWaterMark / 2) {
        this.stopDrainWatch();
        this.drainEmitter.fire();
      }
    }, this.options.drainPollMs ?? 20);
  }
  private stopDrainWatch(): void {
    if (this.drainTimer) clearInterval(this.drainTimer);
    this.drainTimer = undefined;
  }

  private handleFrame(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.isClosed) return;
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    if (isBinary && isOutputFrame(buf)) {
      let message: object;
      try {
        message = decodeFrame(buf);
      } catch (e) {
        this.parseErrorEmitter.fire((e as Error).message);
        return;
      }
      this.messageEmitter.fire(message);
      return;
    }
    this.deliver(buf.toString('utf8'));
  }

  private finish(reason: string, local: boolean): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.stopDrainWatch();
    if (this.keepaliveTimer) clearInterval(this.keepaliveTimer);
    this.emitClosed({ reason, local }, true);
  }
}
