// src/client/connect.ts connectInProcess: the shared client scenarios (support/scenarios.ts) against an engine in this process.
import { connectInProcess } from '../../src/client/connect';
import { ExecServer } from '../../src/server/exec-server';
import { defineClientScenarios } from '../support/scenarios';

defineClientScenarios('in-process', async () => {
  const server = new ExecServer();
  const client = await connectInProcess(server, { clientName: 'test' });
  return {
    client,
    close: async () => {
      await client.close();
      await server.shutdown();
    },
  };
});
