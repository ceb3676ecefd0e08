// The executor's end of the one descriptor a sandboxed process's relay (./relay-source.ts) uses:
// every connection the child makes to the relay's listeners inside its network namespace is a
// stream multiplexed over it. The peer is as untrusted as the sandboxed command itself (it runs
// in the sandbox, with the command's rights): every frame is bounded and checked, a stream id is
// used once, the number of open streams is capped, and a malformed frame ends the whole mux.
//
// Frame: type u8, stream id u32 BE, length u32 BE, payload.
//   OPEN   relay → executor  payload: listener u8 (0 HTTP, 1 SOCKS5), client port u16
//   DATA   both ways         payload: bytes (at most MAX_FRAME_PAYLOAD)
//   END    both ways         the sender will send no more data (half close)
//   CLOSE  both ways         the stream is gone (reset)
//   WINDOW both ways         payload: u32, bytes of this stream the sender has written on
// Flow control: a side sends at most STREAM_WINDOW unacknowledged bytes per stream, so one slow
// reader never makes the other side buffer without bound.
import { Duplex } from 'node:stream';

export const FRAME = { OPEN: 1, DATA: 2, END: 3, CLOSE: 4, WINDOW: 5 } as const;
export const HEADER_BYTES = 9;
export const MAX_FRAME_PAYLOAD = 64 * 1024;
export const STREAM_WINDOW = 1024 * 1024;
/** Concurrent proxied connections per process; more are reset at once. */
export const MAX_STREAMS = 128;

export type Listener = 'http' | 'socks';

function frame(type: number, id: number, payload?: Buffer): Buffer {
  const h = Buffer.allocUnsafe(HEADER_BYTES);
  h.writeUInt8(type, 0);
  h.writeUInt32BE(id, 1);
  h.writeUInt32BE(payload?.length ?? 0, 5);
  return payload && payload.length > 0 ? Buffer.concat([h, payload]) : h;
}

/** One proxied connection, as a Duplex for the HTTP / SOCKS5 handlers. */
export class MuxStream extends Duplex {
  private inflight = 0;
  private waiting: (() => void) | undefined;
  private owedWindow = 0;
  private gone = false;
  constructor(
    readonly id: number,
    readonly listener: Listener,
    /** "127.0.0.1:<port>" as the child's connection appears to the relay (the reference's `client`). */
    readonly client: string,
    private readonly send: (b: Buffer) => void,
    private readonly onGone: () => void,
  ) {
    super({ allowHalfOpen: true });
  }

  /** A DATA frame from the relay. */
  deliver(data: Buffer): void {
    if (this.gone) return;
    if (this.push(data)) this.send(frame(FRAME.WINDOW, this.id, u32(data.length)));
    else this.owedWindow += data.length;
  }
  /** The relay acknowledged `n` bytes. */
  acked(n: number): void {
    this.inflight = Math.max(0, this.inflight - n);
    if (this.inflight < STREAM_WINDOW && this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w();
    }
  }
  remoteEnd(): void {
    this.push(null);
  }
  remoteClose(): void {
    this.gone = true;
    this.destroy();
  }

  override _read(): void {
    if (this.owedWindow > 0 && !this.gone) {
      this.send(frame(FRAME.WINDOW, this.id, u32(this.owedWindow)));
      this.owedWindow = 0;
    }
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (this.gone) return cb(new Error('stream closed'));
    for (let off = 0; off < chunk.length; off += MAX_FRAME_PAYLOAD) {
      const part = chunk.subarray(off, off + MAX_FRAME_PAYLOAD);
      this.send(frame(FRAME.DATA, this.id, part));
    }
    this.inflight += chunk.length;
    if (this.inflight < STREAM_WINDOW) cb();
    else this.waiting = () => cb();
  }
  override _final(cb: (e?: Error | null) => void): void {
    if (!this.gone) this.send(frame(FRAME.END, this.id));
    cb();
  }
  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    if (!this.gone) {
      this.gone = true;
      this.send(frame(FRAME.CLOSE, this.id));
    }
    this.waiting = undefined;
    this.onGone();
    cb(err);
  }
}

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

/**
 * Reads frames from `socket` (the executor's end of the relay's descriptor) and hands each new
 * stream to `onStream`. Ends (and resets every stream) on a protocol violation or when the
 * socket closes; `close()` does the same from our side (the process is gone).
 */
export class MuxSession {
  private readonly streams = new Map<number, MuxStream>();
  private highestId = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private closed = false;

  constructor(
    private readonly socket: Duplex,
    private readonly onStream: (s: MuxStream) => void,
    private readonly log: (why: string) => void = () => {},
  ) {
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', () => this.close());
    socket.on('close', () => this.close());
    socket.on('end', () => this.close());
  }

  get openStreams(): number {
    return this.streams.size;
  }

  private send(b: Buffer): void {
    if (!this.closed) this.socket.write(b);
  }

  private onData(d: Buffer): void {
    if (this.closed) return;
    this.pending.push(d);
    this.pendingBytes += d.length;
    while (this.pendingBytes >= HEADER_BYTES) {
      const buf = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
      this.pending = [buf];
      const type = buf.readUInt8(0);
      const id = buf.readUInt32BE(1);
      const len = buf.readUInt32BE(5);
      if (len > MAX_FRAME_PAYLOAD) return this.violation(`frame of ${len} bytes`);
      if (buf.length < HEADER_BYTES + len) return;
      const payload = buf.subarray(HEADER_BYTES, HEADER_BYTES + len);
      const rest = buf.subarray(HEADER_BYTES + len);
      this.pending = rest.length > 0 ? [rest] : [];
      this.pendingBytes = rest.length;
      this.onFrame(type, id, Buffer.from(payload));
      if (this.closed) return;
    }
  }

  private violation(why: string): void {
    this.log(`relay protocol violation: ${why}; closing the proxy bridge`);
    this.close();
  }

  private onFrame(type: number, id: number, payload: Buffer): void {
    if (type === FRAME.OPEN) {
      // Ids only grow: a reused id could be mistaken for a stream that has already gone.
      if (payload.length !== 3 || id === 0 || id <= this.highestId) return this.violation('bad OPEN');
      this.highestId = id;
      const kind = payload.readUInt8(0);
      if (kind > 1) return this.violation('unknown listener');
      if (this.streams.size >= MAX_STREAMS) {
        this.send(frame(FRAME.CLOSE, id));
        return;
      }
      const s = new MuxStream(id, kind === 0 ? 'http' : 'socks', `127.0.0.1:${payload.readUInt16BE(1)}`, (b) => this.send(b), () => this.streams.delete(id));
      s.on('error', () => {});
      this.streams.set(id, s);
      this.onStream(s);
      return;
    }
    const s = this.streams.get(id);
    if (!s) {
      if (id > this.highestId) return this.violation('frame for a stream never opened');
      return; // a stream we already reset: frames in flight
    }
    switch (type) {
      case FRAME.DATA:
        s.deliver(payload);
        return;
      case FRAME.END:
        s.remoteEnd();
        return;
      case FRAME.CLOSE:
        s.remoteClose();
        return;
      case FRAME.WINDOW:
        if (payload.length !== 4) return this.violation('bad WINDOW');
        s.acked(payload.readUInt32BE(0));
        return;
      default:
        this.violation(`frame type ${type}`);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.streams.values()]) s.remoteClose();
    this.streams.clear();
    this.socket.destroy();
  }
}
