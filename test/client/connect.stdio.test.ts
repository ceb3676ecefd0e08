// src/client/connect.ts connectStdio: the shared client scenarios (support/scenarios.ts) over a stdio stream pair.
import { PassThrough } from 'node:stream';
import { connectStdio } from '../../src/client/connect';
import { ExecServer } from '../../src/server/exec-server';
import { serveConnection } from '../../src/transports/serve';
import { StdioTransport } from '../../src/transports/stdio';
import { defineClientScenarios } from '../support/scenarios';

// connectStdio over a pair of pipes, with our server on the other end as the CLI wires it.
defineClientScenarios('stdio streams', async () => {
  const server = new ExecServer();
  const c2s = new PassThrough();
  const s2c = new PassThrough();
  serveConnection(server, new StdioTransport(c2s, s2c), { terminateOnClose: true, label: 'stdio-test' });
  const client = await connectStdio({ input: s2c, output: c2s }, { clientName: 'test' });
  return {
    client,
    close: async () => {
      await client.close();
      await server.shutdown();
    },
  };
});
