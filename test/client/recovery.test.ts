import { ExecServer } from '../../src/server/exec-server';
import { serveConnection } from '../../src/transports/serve';
import { listenWebSocket } from '../../src/transports/websocket-server';
import { defineRecoveryScenarios } from './recovery-scenarios';

defineRecoveryScenarios('recovery (our server)', async () => {
  const server = new ExecServer();
  const listener = await listenWebSocket({ host: '127.0.0.1', port: 0, onConnection: (t) => serveConnection(server, t) });
  return {
    url: listener.url,
    stop: async () => {
      await listener.close();
      await server.shutdown();
    },
  };
});
