// Environments in the UI for other features: the connector, connecting with progress, the
// status-bar item, and the command context every feature's commands take.
export { createCommandContext } from './command-context';
export type { CommandContext } from './command-context';
export { registerEnvironmentCommands } from './commands';
export { connectWithProgress, createConnector, LocalServerHolder, StatusBar } from './connect';
