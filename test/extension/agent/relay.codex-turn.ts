// One real Codex turn (unmodified `codex app-server` of the reference package, a stand-in
// model playing `script`) against an agent endpoint fixture (relay-helpers.ts): Codex's
// environment is the endpoint, its workspace the fixture's `ws`. Used by relay.codex*.test.ts.
import { referenceCodexBinary, startCodexAppServer, type SandboxMode } from '../../support/codex/codex-app-server';
import { startMockModel, type MockStep } from '../../support/codex/mock-model';
import { repoRoot } from '../../support/cli';
import { ws, type Fixture } from './relay-helpers';

/** One Codex turn against the endpoint of `devbox` (Codex's environment = the endpoint). */
export async function codexTurn(f: Fixture, mode: SandboxMode | undefined, script: MockStep[]) {
  const model = await startMockModel({ script });
  const app = await startCodexAppServer({ codexBinary: referenceCodexBinary(repoRoot), modelBaseUrl: model.baseUrl, execServerUrl: f.endpoint.url, token: f.endpoint.token, workspace: ws, sandboxMode: mode });
  try {
    const thread = await app.startThread();
    const result = await app.runTurn(thread, 'run the scripted steps', 90_000);
    const outputs = model.toolOutputs();
    return { result, out: (id: string) => outputs.get(id)?.output ?? '<no tool output>', remaining: model.remaining(), stderr: app.stderr() };
  } finally {
    await app.stop();
    await model.stop();
  }
}

