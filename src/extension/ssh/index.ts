// Connect to Host's plain-Node side as other features use it: installing the CLI on a host, the
// host probe, and the connection route of a server that outlives the window.
export { buildPayload, findBundle, InstallError, isOutdated, MIN_NODE_MAJOR, parseNodeVersion, planInstall } from './install';
export type { CliBundle, InstallPlan } from './install';
export { isStdioFallback, persistentSshRoute, persistentSshSpec, sshRelayRoutes } from './persist';
export { INSTALL_DIR, parseProbeOutput, PROBE_SCRIPT } from './probe';
export type { HostFacts } from './probe';
export { AskpassService, classifyPrompt } from './askpass';
export type { AskpassProvider, AskpassPrompt } from './askpass';
