// A socket-like Duplex over a readable/writable pair (a child's stdout/stdin, e.g. `ssh -W
// host:port`), for a websocket upgraded on it (./ws-upgrade.ts, the `stream` option of
// ./websocket-client.ts): ws calls setNoDelay/setTimeout on the socket it gets, which mean
// nothing for a pipe and are no-ops here.
// Backpressure passes through both ways; the end of the readable ends this stream.
import { Duplex, type Readable, type Writable } from 'node:stream';

export class StreamSocket extends Duplex {
  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
  ) {
    super();
    input.on('data', (d: Buffer) => {
      if (!this.push(d)) input.pause();
    });
    input.on('end', () => this.push(null));
    input.on('error', (e) => this.destroy(e));
    output.on('error', (e) => this.destroy(e));
  }

  override _read(): void {
    this.input.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (this.output.destroyed || this.output.writableEnded) return cb(new Error('the stream is closed'));
    if (this.output.write(chunk)) cb();
    else this.output.once('drain', () => cb());
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.output.end();
    cb();
  }

  override _destroy(e: Error | null, cb: (e?: Error | null) => void): void {
    this.output.destroy();
    this.input.destroy();
    cb(e);
  }

  setNoDelay(): this {
    return this;
  }
  setTimeout(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
}
