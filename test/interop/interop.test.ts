// The same client-level scenarios against our built CLI and the reference `codex exec-server`,
// over websocket and over stdio (command transport), for each reference version. Requires `npm run build` (dist/cli.js).
import { existsSync } from 'node:fs';
import { connectCommand, connectWebSocket } from '../../src/client/connect';
import { defineClientScenarios } from '../support/scenarios';
import { cliPath, commandOf, ourServer, referenceServers, startWsServer, type ServerCommand } from '../support/reference';

if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` before the interop tests`);

// Every reference version (pinned and newest): these scenarios are cheap.
for (const server of [ourServer, ...referenceServers()] as ServerCommand[]) {
  defineClientScenarios(`interop ${server.name} ws`, async () => {
    const running = await startWsServer(server);
    const client = await connectWebSocket(running.url, { clientName: 'interop' });
    return {
      client,
      close: async () => {
        await client.close();
        await running.stop();
      },
    };
  });
  defineClientScenarios(`interop ${server.name} stdio`, async () => {
    const client = await connectCommand(commandOf(server), server.args('stdio'), { env: server.env(), clientName: 'interop' });
    return { client, close: () => client.close() };
  });
}
