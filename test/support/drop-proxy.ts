// A TCP proxy between a client and a websocket server that can cut every live connection
// at once — a real network drop (RST-like destroy), not a polite close.
import * as net from 'node:net';

export interface DropProxy {
  url: string;
  /** While true, new connections are cut at once (the server looks unreachable). */
  refuse: boolean;
  /** How many connections were cut at once because of `refuse` (a client's failed attempts). */
  readonly refused: number;
  /** Destroys every current connection (both directions). Returns how many were cut. */
  dropAll(): number;
  readonly live: number;
  close(): Promise<void>;
}

export async function startDropProxy(targetUrl: string): Promise<DropProxy> {
  const target = new URL(targetUrl);
  const pairs = new Set<[net.Socket, net.Socket]>();
  const state = { refuse: false, refused: 0 };
  const server = net.createServer((down) => {
    if (state.refuse) {
      state.refused++;
      down.resetAndDestroy();
      return;
    }
    const up = net.connect(Number(target.port), target.hostname);
    const pair: [net.Socket, net.Socket] = [down, up];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      down.destroy();
      up.destroy();
    };
    down.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
    down.pipe(up);
    up.pipe(down);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    get refuse() {
      return state.refuse;
    },
    set refuse(v: boolean) {
      state.refuse = v;
    },
    get refused() {
      return state.refused;
    },
    url: `ws://127.0.0.1:${port}`,
    dropAll,
    get live() {
      return pairs.size;
    },
    close() {
      dropAll();
      return new Promise((r) => server.close(() => r()));
    },
  };
  function dropAll(): number {
    const n = pairs.size;
    for (const [a, b] of [...pairs]) {
      a.resetAndDestroy();
      b.resetAndDestroy();
    }
    pairs.clear();
    return n;
  }
}
