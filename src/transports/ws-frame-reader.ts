// The receive side of a `ws` WebSocket over plain TCP, done here instead of by ws's Receiver,
// for either end (./ws-client-reader.ts, ./ws-server-reader.ts).
//
// Why: the socket is read into large slabs (net's user-buffer reads), and every frame that lies
// whole in a slab is parsed (and unmasked) in place and handed on as a view: no copy, and one
// slab per ~1 MiB instead of a fresh buffer per 64 KiB read plus ws's copy of each frame that
// spans two reads (with 64 KiB payloads, nearly every frame). Those fresh buffers were most of
// the garbage of a stream: they are external memory, and V8 runs a full collection for every
// 64 MiB of it (docs/performance.md).
//
// What it emits is what ws's receiver would: 'message' (data, isBinary), 'ping' (answered with
// a pong), 'pong', and for a close frame the state ws records before it replies. `ws` keeps
// all sending (masking, ping, close) and the close handshake's bookkeeping. A protocol
// violation (wrong masking, RSV bits, bad opcode, oversized message, bad close frame, invalid
// UTF-8) emits 'error' and ends the connection as ws does (close code 1002/1009/1007).
import type * as net from 'node:net';
import { isUtf8 } from 'node:buffer';
import type WebSocket from 'ws';
import { unmask } from './ws-mask';

/** Slab size; a frame larger than this gets a slab of its own size. */
export const SLAB_BYTES = 1024 * 1024;
/** Never ask the kernel for fewer bytes than this (a new slab is started instead). */
const MIN_READ = 64 * 1024;
/** Binary payloads below this are copied out, so a kept small chunk does not pin a whole slab. */
const VIEW_MIN = 32 * 1024;
/**
 * The server's reader hands on at most this many messages per event-loop turn (FrameReader's
 * `sliceMessages`; a stdio server's lines too, StdioTransport's `messagesPerTurn`). Why: one read can hold thousands of pipelined requests, and handled in one
 * go they and their answers are all alive at once (the answers wait for the turn's one write:
 * websocket-transport.ts corkForThisTurn). V8 grows its young generation when that much
 * survives its collections, and the server kept the larger one (docs/performance.md, "Bursts of
 * pipelined requests"). Between slices other connections' reads and timers get their turn too.
 */
export const SERVER_MESSAGES_PER_SLICE = 64;

/** The `ws` internals the close path sets, as ws's own receiver does (ws 8). */
interface WsCloseState {
  _closeFrameReceived?: boolean;
  _closeCode?: number;
  _closeMessage?: Buffer;
}

class ProtocolError extends Error {
  constructor(
    message: string,
    readonly closeCode: number,
  ) {
    super(message);
  }
}

export abstract class FrameReader {
  protected slab: Buffer;
  /** Unparsed bytes are slab[start, end). */
  private start = 0;
  private end = 0;
  /** Views into the current slab were handed out: it cannot be compacted or reused. */
  private slabShared = false;
  /** Total size (header + payload) of the frame at `start` once its header is known. */
  private need = 0;
  /** The buffer last given to the kernel to read into (normally slab[end…]). */
  private lent: Uint8Array | undefined;
  protected ws: WebSocket | undefined;
  private fragments: Buffer[] = [];
  private fragmentBytes = 0;
  private fragmentBinary = false;
  private failed = false;
  private released = false;
  /** Messages handed on since parsing last started, and whether its continuation is scheduled. */
  private sliceCount = 0;
  private sliceScheduled = false;

  constructor(
    private readonly maxPayload: number,
    /** Frames come from a client: each must be masked (and from a server: none may be). */
    private readonly fromClient: boolean,
    /** Messages handed on per event-loop turn; the rest wait in the slab for a setImmediate (0: no limit). */
    private readonly sliceMessages = 0,
  ) {
    this.slab = this.allocSlab(SLAB_BYTES);
  }

  /** A slab of `bytes` to read into. */
  protected abstract allocSlab(bytes: number): Buffer;
  /** The reader has moved on from `slab` (views handed out of it may live on). */
  protected abstract dropSlab(slab: Buffer): void;
  /** A binary payload goes on as a view of the slab (not a copy). */
  protected abstract lend(view: Buffer): void;

  /** The buffer for the kernel's next read (net's `onread.buffer`). */
  protected nextBuffer(): Uint8Array {
    const pending = this.end - this.start;
    const want = Math.max(this.need, pending + MIN_READ);
    if (!(this.slab.length - this.end >= MIN_READ && this.slab.length - this.start >= want)) {
      if (!this.slabShared && this.slab.length >= want) {
        // Nothing handed out from this slab: move the unparsed bytes to its start and read on.
        this.slab.copyWithin(0, this.start, this.end);
        this.start = 0;
        this.end = pending;
      } else this.newSlab(want);
    }
    this.lent = this.slab.subarray(this.end);
    return this.lent;
  }

  /** Continues in a fresh slab with room for `room` bytes from the unparsed ones on (moved to its start). */
  private newSlab(room: number): void {
    const pending = this.end - this.start;
    const next = this.allocSlab(Math.max(SLAB_BYTES, room));
    this.slab.copy(next, 0, this.start, this.end);
    this.dropSlab(this.slab);
    this.slab = next;
    this.slabShared = false;
    this.start = 0;
    this.end = pending;
  }

  /** `n` bytes were read into the buffer nextBuffer gave (net's `onread.callback`). */
  protected onRead(n: number): void {
    const lent = this.lent!;
    this.lent = undefined; // the kernel is done with it; nextBuffer is asked again next
    if (!this.ws) return this.beforeAttach(Buffer.from(lent.subarray(0, n)));
    // After a protocol error the peer's bytes are read and dropped (fail): `end` stays, so the next read lands on them.
    if (this.failed) return;
    if (lent.buffer === this.slab.buffer && lent.byteOffset === this.slab.byteOffset + this.end) this.end += n;
    else this.append(lent.subarray(0, n)); // the slab moved on since (append): copy them into place
    this.parse();
  }

  /** Bytes read into our slab before attach (the handshake): passed on as a copy. */
  protected beforeAttach(_bytes: Buffer): void {}

  /**
   * Bytes read before this reader took over (the socket's readable buffer). They go into a new
   * slab, never into the region the kernel may still be reading into; parsed by the caller.
   */
  protected append(d: Uint8Array): void {
    if (d.length === 0) return;
    if (this.lent?.buffer === this.slab.buffer || this.slab.length - this.end < d.length) this.newSlab(this.end - this.start + d.length + MIN_READ);
    this.slab.set(d, this.end);
    this.end += d.length;
  }

  /**
   * Takes the socket's reading over from ws: its 'data' listeners go, the bytes ws put back
   * (read with the upgrade) move from the socket's readable buffer into the slab, to be parsed
   * on the next tick, once the caller has set up its listeners (as ws's receiver would), and
   * parsing goes on after `ws.resume()` (the socket's 'resume'). The moved bytes never land in
   * a buffer the kernel holds (append).
   */
  protected adopt(ws: WebSocket, socket: net.Socket): void {
    this.ws = ws;
    socket.removeAllListeners('data');
    const early = socket.read() as Buffer | null;
    if (early) {
      this.append(early);
      process.nextTick(() => this.parse());
    }
    socket.on('resume', () => {
      if (this.ws && !this.ws.isPaused) this.parse();
    });
  }

  /** Drops the current slab (the socket is closed: no read will come). */
  protected release(): void {
    this.released = true;
    this.lent = undefined;
    this.dropSlab(this.slab);
  }

  /**
   * Parses what the slab holds, message by message, while `ws` is not paused: a paused socket
   * reads nothing more, and the messages already read wait here (adopt's 'resume' goes on).
   * With `sliceMessages`, a full slice ends the turn: the rest is parsed in a setImmediate, and a
   * read or resume meanwhile only adds bytes (the continuation parses them, in order).
   */
  protected parse(): void {
    if (this.sliceScheduled) return;
    this.sliceCount = 0;
    try {
      while (!this.failed && this.ws && !this.ws.isPaused) {
        if (this.sliceMessages > 0 && this.sliceCount >= this.sliceMessages) {
          this.sliceScheduled = true;
          setImmediate(() => {
            this.sliceScheduled = false;
            // The socket closed meanwhile: its slab went back to the pool, nothing more is delivered.
            if (!this.released) this.parse();
          });
          return;
        }
        const avail = this.end - this.start;
        if (avail < 2) break;
        const s = this.slab;
        const b0 = s[this.start];
        const b1 = s[this.start + 1];
        let len = b1 & 0x7f;
        let head = 2;
        if (len === 126) {
          if (avail < 4) break;
          len = s.readUInt16BE(this.start + 2);
          head = 4;
        } else if (len === 127) {
          if (avail < 10) break;
          const hi = s.readUInt32BE(this.start + 2);
          if (hi > 0x1f_ffff) throw new ProtocolError('frame length out of range', 1009);
          len = hi * 0x1_0000_0000 + s.readUInt32BE(this.start + 6);
          head = 10;
        }
        const masked = (b1 & 0x80) !== 0;
        const opcode = b0 & 0x0f;
        const fin = (b0 & 0x80) !== 0;
        if (b0 & 0x70) throw new ProtocolError('RSV bits set without a negotiated extension', 1002);
        if (masked !== this.fromClient) throw new ProtocolError(this.fromClient ? 'MASK must be set' : 'masked frame from the server', 1002);
        if (opcode >= 8) {
          if (!fin || len > 125) throw new ProtocolError('invalid control frame', 1002);
          if (opcode > 10) throw new ProtocolError(`invalid opcode ${opcode}`, 1002);
        } else if (opcode > 2) throw new ProtocolError(`invalid opcode ${opcode}`, 1002);
        else if (opcode === 0 && this.fragments.length === 0) throw new ProtocolError('continuation frame without a message', 1002);
        else if (opcode !== 0 && this.fragments.length > 0) throw new ProtocolError('new message inside a fragmented one', 1002);
        if (opcode < 8 && this.fragmentBytes + len > this.maxPayload) throw new ProtocolError('Max payload size exceeded', 1009);
        const key = this.start + head;
        if (masked) head += 4;
        if (avail < head + len) {
          this.need = head + len;
          break;
        }
        this.need = 0;
        const from = this.start + head;
        this.start = from + len;
        if (masked) unmask(s.subarray(from, from + len), s.subarray(key, key + 4));
        this.frame(opcode, fin, from, len);
      }
    } catch (e) {
      if (e instanceof ProtocolError) this.fail(e);
      else throw e;
    }
    // Not while the kernel holds a buffer at `end` (parsing what append put in).
    if (this.start === this.end && !this.slabShared && !this.lent) this.start = this.end = 0;
  }

  private frame(opcode: number, fin: boolean, from: number, len: number): void {
    const ws = this.ws!;
    if (opcode >= 8) {
      const payload = Buffer.from(this.slab.subarray(from, from + len));
      if (opcode === 9) {
        // ws's default: masked from a client, not from a server.
        ws.pong(payload, undefined, () => undefined);
        ws.emit('ping', payload);
      } else if (opcode === 10) ws.emit('pong', payload);
      else this.closeFrame(payload);
      return;
    }
    if (!fin || this.fragments.length > 0) {
      if (opcode !== 0) this.fragmentBinary = opcode === 2;
      this.fragments.push(Buffer.from(this.slab.subarray(from, from + len)));
      this.fragmentBytes += len;
      if (!fin) return;
      const data = Buffer.concat(this.fragments, this.fragmentBytes);
      const binary = this.fragmentBinary;
      this.fragments = [];
      this.fragmentBytes = 0;
      return this.message(data, binary);
    }
    const binary = opcode === 2;
    let data: Buffer;
    if (!binary || len >= VIEW_MIN) {
      // Text is decoded at once (never kept); large binary payloads are handed on as views.
      data = this.slab.subarray(from, from + len);
      if (binary) {
        this.slabShared = true;
        this.lend(data);
      }
    } else data = Buffer.from(this.slab.subarray(from, from + len));
    this.message(data, binary);
  }

  private message(data: Buffer, binary: boolean): void {
    if (!binary && !isUtf8(data)) throw new ProtocolError('invalid UTF-8 in a text message', 1007);
    this.sliceCount++;
    this.ws!.emit('message', data, binary);
  }

  private closeFrame(payload: Buffer): void {
    const ws = this.ws!;
    let code = 1005;
    let reason: Buffer = Buffer.alloc(0);
    if (payload.length === 1) throw new ProtocolError('invalid close frame', 1002);
    if (payload.length >= 2) {
      code = payload.readUInt16BE(0);
      if (code < 1000 || code === 1004 || code === 1005 || code === 1006 || (code > 1015 && code < 3000) || code > 4999) throw new ProtocolError(`invalid close code ${code}`, 1002);
      reason = payload.subarray(2);
      if (!isUtf8(reason)) throw new ProtocolError('invalid UTF-8 in a close reason', 1007);
    }
    // What ws's receiver records before it answers: the 'close' event then carries the peer's code and reason.
    const state = ws as unknown as WsCloseState;
    state._closeFrameReceived = true;
    state._closeCode = code;
    state._closeMessage = reason;
    this.failed = true; // nothing after a close frame is read
    if (code === 1005) ws.close();
    else ws.close(code, reason);
  }

  private fail(err: ProtocolError): void {
    if (this.failed) return;
    this.failed = true;
    const ws = this.ws!;
    try {
      ws.close(err.closeCode);
    } catch {
      /* closing already */
    }
    ws.emit('error', new RangeError(err.message));
    // As ws's own receiver does: the close frame goes out, then our FIN, and what the peer still
    // sends is read and dropped (onRead) until it closes or ws's close timer ends the socket.
    // Destroying the socket instead, with the peer's unread bytes in its receive queue, sends a
    // reset, which can reach the peer before it has read the close frame: it then sees 1006,
    // not the code (a 64 MiB + 16 frame sent whole: 1006 in 2 of 3 runs under load).
    wsSocket(ws)?.end();
  }
}

/** The socket `ws` reads from, where it is a plain TCP socket. */
export function wsSocket(ws: WebSocket): net.Socket | undefined {
  return (ws as unknown as { _socket?: net.Socket })._socket;
}
