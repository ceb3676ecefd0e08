import { ExecServerClient } from '../../src/client/client';
import { ExecServer } from '../../src/server/exec-server';
import { defineClientScenarios } from './scenarios';

defineClientScenarios('in-process', async () => {
  const server = new ExecServer();
  const client = await ExecServerClient.connectInProcess(server, { clientName: 'test' });
  return {
    client,
    close: async () => {
      await client.close();
      await server.shutdown();
    },
  };
});
