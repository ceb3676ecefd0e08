// The command table and its registration, the settings binding and the request telemetry glue:
// the VS Code side every feature's UI shares.
export { ENVIRONMENTS_VIEW, SEARCH_RESULTS_VIEW, TERMINAL_PROFILE } from './command-ids';
export type { CommandId, CommandResult } from './command-ids';
export { executeCommand, registerCommand, str, strArray } from './command-registry';
export type { Args, CommandHandler } from './command-registry';
export { createSettingsOwner } from './settings';
export { registerRequestTelemetry } from './telemetry';
export { oneAnswer, type OneAnswer } from './quick-input';
export { offerNextSteps } from './next-steps';
