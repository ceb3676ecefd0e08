// Ceilings for the stream scenario, measured in the same alternating run as the servers:
// "bare ws" — a plain `ws` client against bench/bare-ws-server.mjs (no protocol: one binary
// message per pipe read); "bare pipe" — this process spawns the producer itself and discards
// what it reads (no server, no socket). They only run stdout streaming; every other call throws.
import { spawn } from 'node:child_process';
import WebSocket from 'ws';
import type { BenchClient } from './bench-client';
import { BENCH_MAX_PAYLOAD } from './ws-transport';

const HEADER = 14; // bench/bare-ws-server.mjs's frame header
const unsupported = (what: string) => Promise.reject(new Error(`${what}: not measured on a bare ceiling`));

abstract class StreamOnly implements BenchClient {
  abstract readonly kind: string;
  abstract runCollect(argv: string[], cwd: string, onData: (chunk: Uint8Array) => void): Promise<number>;
  stat = () => unsupported('stat');
  statPipelined = () => unsupported('statPipelined');
  runToExit = () => unsupported('runToExit');
  readFile = () => unsupported('readFile') as Promise<Uint8Array>;
  readStream = () => unsupported('readStream');
  writeFile = () => unsupported('writeFile');
  walk = () => unsupported('walk') as Promise<number>;
  async close(): Promise<void> {}
}

export class BareWsBench extends StreamOnly {
  readonly kind = 'bare ws client';
  private constructor(private readonly ws: WebSocket) {
    super();
  }

  static async connect(url: string): Promise<BareWsBench> {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: BENCH_MAX_PAYLOAD });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new BareWsBench(ws);
  }

  runCollect(argv: string[], cwd: string, onData: (chunk: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      const onMessage = (data: WebSocket.RawData, isBinary: boolean) => {
        const buf = data as Buffer;
        if (isBinary) return onData(buf.subarray(HEADER));
        this.ws.off('message', onMessage);
        const end = JSON.parse(buf.toString()) as { exitCode?: number; error?: string };
        if (end.error !== undefined) reject(new Error(end.error));
        else resolve(end.exitCode ?? 1);
      };
      this.ws.on('message', onMessage);
      this.ws.send(JSON.stringify({ argv, cwd }));
    });
  }

  override async close(): Promise<void> {
    this.ws.close();
  }
}

export class BarePipeBench extends StreamOnly {
  readonly kind = 'bare pipe reader (in this process)';
  runCollect(argv: string[], cwd: string, onData: (chunk: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      child.once('error', reject);
      child.stdout.on('data', onData);
      child.stderr.resume();
      child.once('close', (code) => resolve(code ?? 1));
    });
  }
}
