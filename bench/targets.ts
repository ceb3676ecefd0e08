// Chooses the client the benchmark drives: the project's ExecServerClient by default (the
// same client code measures both servers), or the minimal src/rpc client with --raw-client.
import type { BenchClient } from './bench-client';
import { ExecClientBench } from './exec-client-adapter';
import { RawBenchClient } from './raw-client';
import { ExecServer } from '../src/server/exec-server';

export interface TargetFactory {
  websocketKind: string;
  websocket(url: string): Promise<BenchClient>;
  inProcessKind: string;
  /** Undefined when no in-process client is available. */
  inProcess?: () => Promise<BenchClient>;
  /** Stops what the factory started (the in-process server and its children). */
  dispose(): Promise<void>;
}

export async function createTargetFactory(opts: { raw: boolean; frameReader?: 'own' | 'ws'; log: (m: string) => void }): Promise<TargetFactory> {
  // The in-process server lives in this process, with default options like the CLI's.
  const server = new ExecServer({ log: (level, m) => level === 'error' && opts.log(`in-process server: ${m}`) });
  const inProcess = () => ExecClientBench.inProcess(server);
  const dispose = () => server.shutdown();
  if (opts.raw) {
    return { websocketKind: 'raw RpcConnection', websocket: (url) => RawBenchClient.connect(url), inProcessKind: 'ExecServerClient', inProcess, dispose };
  }
  return { websocketKind: 'ExecServerClient', websocket: (url) => ExecClientBench.websocket(url, true, opts.frameReader), inProcessKind: 'ExecServerClient', inProcess, dispose };
}
