// BenchClient over the project's ExecServerClient — the client both servers are measured with
// (websocket), and the in-process client. Only thin glue: every call goes through the real client.
import type { FsWalkOptions } from '../src/protocol/types';
import { ExecServerClient } from '../src/client/client';
import { connectInProcess, connectWebSocket } from '../src/client/connect';
import type { ExecServer } from '../src/server/exec-server';
import type { BenchClient } from './bench-client';
import { BENCH_MAX_PAYLOAD } from './ws-transport';

/** fs/readBlock's maximum: fewer round trips for the streamed read (the client defaults to 256 KiB). */
const BLOCK = 1024 * 1024;

export class ExecClientBench implements BenchClient {
  constructor(
    private readonly client: ExecServerClient,
    readonly kind: string,
    private readonly reconnectJson?: () => Promise<ExecClientBench>,
  ) {}

  static async websocket(url: string, binaryOutput = true, frameReader?: 'own' | 'ws'): Promise<ExecClientBench> {
    // reconnect: false — a stalled or dropped connection must be reported, not silently resumed.
    // maxPayload: a 100 MiB fs/readFile answer is ~134 MiB of base64 in one frame.
    const c = await connectWebSocket(url, { clientName: 'exec-server-bench', reconnect: false, maxPayload: BENCH_MAX_PAYLOAD, binaryOutput, frameReader });
    return new ExecClientBench(c, 'ExecServerClient (websocket)', binaryOutput ? () => ExecClientBench.websocket(url, false, frameReader) : undefined);
  }

  /** No socket, no JSON: the client calls the server's ServerConnection directly. */
  static async inProcess(server: ExecServer, binaryOutput = true): Promise<ExecClientBench> {
    const c = await connectInProcess(server, { clientName: 'exec-server-bench', terminateOnClose: true, binaryOutput });
    return new ExecClientBench(c, 'ExecServerClient (in-process)', binaryOutput ? () => ExecClientBench.inProcess(server, false) : undefined);
  }

  jsonOutputVariant(): Promise<BenchClient> {
    return this.reconnectJson ? this.reconnectJson() : Promise.resolve(this);
  }

  async stat(path: string): Promise<void> {
    await this.client.fs.stat(path);
  }

  async statPipelined(path: string, count: number, onAnswer?: () => void): Promise<void> {
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < count; i++) all.push(this.client.fs.stat(path).then(onAnswer));
    await Promise.all(all);
  }

  async runToExit(argv: string[], cwd: string): Promise<number> {
    const p = await this.client.startProcess({ argv, cwd });
    return p.exited;
  }

  async runCollect(argv: string[], cwd: string, onData: (chunk: Uint8Array) => void): Promise<number> {
    const p = await this.client.startProcess({ argv, cwd });
    p.onOutput((e) => onData(e.data));
    const [code] = await Promise.all([p.exited, p.closed]);
    return code;
  }

  readFile(path: string): Promise<Uint8Array> {
    return this.client.fs.readFile(path);
  }

  async readStream(path: string, onData: (chunk: Uint8Array) => void): Promise<void> {
    for await (const chunk of this.client.fs.createReadStream(path, { blockSize: BLOCK })) onData(chunk);
  }

  /** Through ClientFs.writeFile, the provider's save path: streamAboveBytes 0 streams whenever the server advertises fileWriteStreaming. */
  writeFile(path: string, data: Uint8Array, streamed: boolean): Promise<void> {
    return this.client.fs.writeFile(path, data, streamed ? { streamAboveBytes: 0 } : {});
  }

  async walk(path: string, options: FsWalkOptions): Promise<number> {
    return (await this.client.fs.walk(path, options)).entries.length;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
