// The receive side of a client `ws` WebSocket over plain TCP, done here instead of by `ws`.
//
// Why: the socket is read into large slabs we own (net's `onread`), and every websocket frame
// that lies whole in a slab is handed on as a view — no copy, and one allocation per ~1 MiB
// instead of one per 64 KiB read plus one per frame (ws copies each frame that spans two reads,
// which with 64 KiB output frames is nearly every frame). Streaming 128 MiB of process output,
// the client process spends a fifth to a quarter less CPU with it (docs/performance.md).
//
// How: the handshake is done on this socket (./ws-upgrade.ts for loopback hosts, ws's client
// for others), `ws` does all sending (masking, ping, close) and the close handshake's bookkeeping. Until the upgrade
// the bytes read are passed on as 'data' events (copies: Node's HTTP client reads those); once
// `ws` reports 'open', its socket 'data' listener is replaced by this parser, which emits the
// same WebSocket events `ws`'s receiver would: 'message' (data, isBinary), 'ping' (answered
// with a pong), 'pong', and for a close frame the same state `ws` records before it replies.
// A protocol violation (masked or RSV frame, bad opcode, oversized message, bad close frame)
// emits 'error' and ends the connection as `ws` does (close code 1002/1009/1007).
//
// Only for plain `ws://` connections that we open ourselves (no TLS, no caller-provided stream).
// For a non-loopback host ws's client goes through Node's HTTP stack, which VS Code's proxy agent
// replaces in the extension host (it opens the socket itself): `ws` then is not on ours,
// attach() declines, and `ws` reads as usual.
import * as net from 'node:net';
import { isUtf8 } from 'node:buffer';
import type WebSocket from 'ws';

/** Slab size; a frame larger than this gets a slab of its own size. */
const SLAB_BYTES = 1024 * 1024;
/** Never ask the kernel for fewer bytes than this (a new slab is started instead). */
const MIN_READ = 64 * 1024;
/** Binary payloads below this are copied out, so a kept small chunk does not pin a whole slab. */
const VIEW_MIN = 32 * 1024;

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

export class ClientFrameReader {
  private slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
  /** Unparsed bytes are slab[start, end). */
  private start = 0;
  private end = 0;
  /** Views into the current slab were handed out: it cannot be reused. */
  private slabShared = false;
  /** Total size (header + payload) of the frame at `start` once its header is known. */
  private need = 0;
  private ws: WebSocket | undefined;
  private socket: net.Socket | undefined;
  private fragments: Buffer[] = [];
  private fragmentBytes = 0;
  private fragmentBinary = false;
  private failed = false;

  constructor(private readonly maxPayload: number) {}

  /** For ws's `createConnection`: a TCP socket read into our slabs. */
  readonly createConnection = (options: net.NetConnectOpts & { socketPath?: string }): net.Socket => {
    // ws passes the URL's path as `path`; for net that would mean a unix socket (ws's own netConnect does the same).
    const tcp = { ...options, path: options.socketPath } as unknown as net.TcpNetConnectOpts;
    const socket = net.connect({
      ...tcp,
      onread: {
        buffer: () => this.nextBuffer(),
        callback: (n: number) => {
          this.onRead(n);
          return true;
        },
      },
    });
    this.socket = socket;
    return socket;
  };

  /**
   * Takes over receiving for `ws` (call on 'open'). Where `ws` is not on our socket (its
   * internals changed), nothing is taken over: the bytes keep going to ws's own receiver as
   * 'data' events, as during the handshake.
   */
  attach(ws: WebSocket): boolean {
    const socket = (ws as unknown as { _socket?: net.Socket })._socket;
    if (!socket || socket !== this.socket) return false;
    this.ws = ws;
    // ws's listener would feed its own receiver; bytes ws put back (read with the 101) arrive here.
    socket.removeAllListeners('data');
    socket.on('data', (d: Buffer) => this.append(d));
    return true;
  }

  private nextBuffer(): Uint8Array {
    const pending = this.end - this.start;
    const want = Math.max(this.need, pending + MIN_READ);
    if (this.slab.length - this.end >= MIN_READ && this.slab.length - this.start >= want) return this.slab.subarray(this.end);
    if (!this.slabShared && this.slab.length >= want) {
      // Nothing handed out from this slab: move the unparsed bytes to its start and read on.
      this.slab.copyWithin(0, this.start, this.end);
      this.start = 0;
      this.end = pending;
      return this.slab.subarray(pending);
    }
    this.newSlab(want);
    return this.slab.subarray(this.end);
  }

  /** Continues in a fresh slab with room for `room` bytes from the unparsed ones on (moved to its start). */
  private newSlab(room: number): void {
    const pending = this.end - this.start;
    const next = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, room));
    this.slab.copy(next, 0, this.start, this.end);
    this.slab = next;
    this.slabShared = false;
    this.start = 0;
    this.end = pending;
  }

  private onRead(n: number): void {
    if (!this.ws) {
      // Handshake (or not attached): Node's HTTP client, then ws, read 'data' events; they get copies.
      const bytes = Buffer.from(this.slab.subarray(this.end, this.end + n));
      this.socket?.emit('data', bytes);
      return;
    }
    this.end += n;
    this.parse();
  }

  private append(d: Buffer): void {
    if (d.length === 0) return;
    if (this.slab.length - this.end < d.length) this.newSlab(this.end - this.start + d.length + MIN_READ);
    d.copy(this.slab, this.end);
    this.end += d.length;
    this.parse();
  }

  private parse(): void {
    try {
      while (!this.failed && this.ws) {
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
        const opcode = b0 & 0x0f;
        const fin = (b0 & 0x80) !== 0;
        if (b0 & 0x70) throw new ProtocolError('RSV bits set without a negotiated extension', 1002);
        if (b1 & 0x80) throw new ProtocolError('masked frame from the server', 1002);
        if (opcode >= 8) {
          if (!fin || len > 125) throw new ProtocolError('invalid control frame', 1002);
          if (opcode > 10) throw new ProtocolError(`invalid opcode ${opcode}`, 1002);
        } else if (opcode > 2) throw new ProtocolError(`invalid opcode ${opcode}`, 1002);
        else if (opcode === 0 && this.fragments.length === 0) throw new ProtocolError('continuation frame without a message', 1002);
        else if (opcode !== 0 && this.fragments.length > 0) throw new ProtocolError('new message inside a fragmented one', 1002);
        if (opcode < 8 && this.fragmentBytes + len > this.maxPayload) throw new ProtocolError('Max payload size exceeded', 1009);
        if (avail < head + len) {
          this.need = head + len;
          break;
        }
        this.need = 0;
        const from = this.start + head;
        this.start = from + len;
        this.frame(opcode, fin, from, len);
      }
    } catch (e) {
      if (e instanceof ProtocolError) this.fail(e);
      else throw e;
    }
    if (this.start === this.end && !this.slabShared) this.start = this.end = 0;
  }

  private frame(opcode: number, fin: boolean, from: number, len: number): void {
    const ws = this.ws!;
    if (opcode >= 8) {
      const payload = Buffer.from(this.slab.subarray(from, from + len));
      if (opcode === 9) {
        ws.pong(payload, true, () => undefined);
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
      if (binary) this.slabShared = true;
    } else data = Buffer.from(this.slab.subarray(from, from + len));
    this.message(data, binary);
  }

  private message(data: Buffer, binary: boolean): void {
    if (!binary && !isUtf8(data)) throw new ProtocolError('invalid UTF-8 in a text message', 1007);
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
    // ws's receiver ends a violating connection at once; so do we.
    setImmediate(() => ws.terminate());
  }
}
