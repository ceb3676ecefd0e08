// Environments as other features use them: the store (Local + settings, tokens in
// SecretStorage), the manager (lazy connect, reconnect, state) and their words.
export { createConnector } from './connector';
export { infoPath } from './input';
export { localUnsupported } from './local-platform';
export { EnvironmentManager } from './manager';
export type { CommandRoute, EnvironmentState } from './manager';
export { shownState } from './status-text';
export { EnvironmentStore, LOCAL_ENVIRONMENT, parseEnvironments } from './store';
export type { AddEnvironmentInput, EnvironmentConfig, EnvironmentKind, EnvironmentSetting } from './store';
