// Environments in the UI for other features: connecting with progress, the
// status-bar item, and the command context every feature's commands take.
export { createCommandContext } from './command-context';
export type { CommandContext } from './command-context';
export { registerEnvironmentCommands } from './commands';
export { connectWithProgress, LocalServerHolder, StatusBar } from './connect';
export { showReconnecting } from './lost-notice';
