// The receive side of a client `ws` WebSocket over plain TCP (./ws-frame-reader.ts parses).
//
// Why: streaming 128 MiB of process output, the client process spends a fifth to a quarter
// less CPU than with ws's receiver (docs/performance.md).
//
// How: the socket is ours from the connect (net's `onread`); the handshake is done on it
// (./ws-upgrade.ts for loopback hosts, ws's client for others), and until the upgrade the
// bytes read are passed on as 'data' events (copies: Node's HTTP client reads those). Once
// `ws` reports 'open', its socket 'data' listener is replaced by the parser. Slabs are never
// reused: a view handed on (process output, a read block) is kept as long as its consumer
// likes, and the garbage collector frees the slab after the last one.
//
// Only for plain `ws://` connections that we open ourselves (no TLS, no caller-provided stream).
// For a non-loopback host ws's client goes through Node's HTTP stack, which VS Code's proxy agent
// replaces in the extension host (it opens the socket itself): `ws` then is not on ours,
// attach() declines, and `ws` reads as usual.
import * as net from 'node:net';
import type WebSocket from 'ws';
import { FrameReader, wsSocket } from './ws-frame-reader';

export class ClientFrameReader extends FrameReader {
  private socket: net.Socket | undefined;

  constructor(maxPayload: number) {
    super(maxPayload, false);
  }

  protected allocSlab(bytes: number): Buffer {
    return Buffer.allocUnsafeSlow(bytes);
  }
  protected dropSlab(): void {}
  protected lend(): void {}

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

  protected override beforeAttach(bytes: Buffer): void {
    // Handshake (or not attached): Node's HTTP client, then ws, read 'data' events.
    this.socket?.emit('data', bytes);
  }

  /**
   * Takes over receiving for `ws` (call on 'open'). Where `ws` is not on our socket (its
   * internals changed), nothing is taken over: the bytes keep going to ws's own receiver as
   * 'data' events, as during the handshake.
   */
  attach(ws: WebSocket): boolean {
    const socket = wsSocket(ws);
    if (!socket || socket !== this.socket) return false;
    this.adopt(ws, socket);
    socket.on('data', (d: Buffer) => {
      this.append(d);
      this.parse();
    });
    return true;
  }
}
