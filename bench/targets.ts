// Chooses the client the benchmark drives: the project's ExecServerClient by default (the
// same client code measures both servers), or the minimal src/rpc client with --raw-client.
import type { BenchClient } from './bench-client';
import { ExecClientBench } from './exec-client-adapter';
import { RawBenchClient } from './raw-client';

export interface TargetFactory {
  websocketKind: string;
  websocket(url: string): Promise<BenchClient>;
  inProcessKind: string;
  /** Undefined when no in-process client is available. */
  inProcess?: () => Promise<BenchClient>;
}

export async function createTargetFactory(opts: { raw: boolean; log: (m: string) => void }): Promise<TargetFactory> {
  if (opts.raw) return { websocketKind: 'raw RpcConnection', websocket: (url) => RawBenchClient.connect(url), inProcessKind: 'none' };
  return { websocketKind: 'ExecServerClient', websocket: (url) => ExecClientBench.websocket(url), inProcessKind: 'none' };
}
