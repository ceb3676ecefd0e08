// Terminals in the UI for other features: the terminal service (shells, Run Command, agent
// processes) and the run/process commands.
export { registerProcessCommands } from './process-commands';
export { registerRunCommands, remoteWindowFolder } from './run-commands';
export { TerminalService, workspaceFolderPaths } from './terminal-service';
export type { RunResult } from './terminal-service';
export { keepRemoteDefaultProfile, remoteWindowWorkspaceFile } from './default-profile';
