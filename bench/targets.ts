// Chooses the client the benchmark drives. The same client code measures both servers.
import type { BenchClient } from './bench-client';
import { RawBenchClient } from './raw-client';

export interface TargetFactory {
  websocketKind: string;
  websocket(url: string): Promise<BenchClient>;
  inProcessKind: string;
  /** Undefined when no in-process client is available. */
  inProcess?: () => Promise<BenchClient>;
}

export async function createTargetFactory(_opts: { raw: boolean; log: (m: string) => void }): Promise<TargetFactory> {
  return { websocketKind: 'raw RpcConnection', websocket: (url) => RawBenchClient.connect(url), inProcessKind: 'none' };
}
