// Drive the real Codex agent against an exec-server, from any plain-Node test (the interop suite,
// the VS Code e2e suite). Three pieces, each usable alone:
//   startMockModel({script})        the model: scripted tool calls, captures what Codex sends back
//   startWsRecorder(upstreamUrl)    a recording websocket proxy in front of the exec-server
//   startCodexAppServer({...})      `codex app-server` with a temp CODEX_HOME pointed at both
//
// Example (one turn that runs a command and writes a file with apply_patch):
//   const model = await startMockModel({ script: [{ exec_command: 'echo hi' }, { apply_patch: patchText }] });
//   const rec = await startWsRecorder(execServerUrl);
//   const codex = await startCodexAppServer({ codexBinary, modelBaseUrl: model.baseUrl, execServerUrl: rec.url,
//     token, workspace, sandboxMode: 'workspace-write' });
//   try {
//     const turn = await codex.runTurn(await codex.startThread(), 'go');   // items, approvals, status
//     rec.calls('process/start');                 // what Codex sent the exec-server, with answers
//     rec.notifications('process/exited');        // exit codes, sandboxDenied
//     model.toolOutputs().get(callId)?.output;    // what Codex told the model
//   } finally { await codex.stop(); await rec.stop(); await model.stop(); }
export * from './codex-app-server';
export * from './mock-model';
export * from './ws-recorder';
