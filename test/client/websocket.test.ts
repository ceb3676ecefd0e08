import { ExecServerClient } from '../../src/client/client';
import { ExecServer } from '../../src/server/exec-server';
import { serveConnection } from '../../src/transports/serve';
import { listenWebSocket } from '../../src/transports/websocket-server';
import { defineClientScenarios } from './scenarios';

defineClientScenarios('websocket', async () => {
  const server = new ExecServer();
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
  const client = await ExecServerClient.connectWebSocket(listener.url, { clientName: 'test' });
  return {
    client,
    close: async () => {
      await client.close();
      await listener.close();
      await server.shutdown();
    },
  };
});
