// What the activation uses of the agent endpoint's UI: the service (start/stop, approval
// questions, Codex entry) and its commands.
export { registerAgentCommands } from './commands';
export { AgentEndpointService, vscodeAgentGateHost, vscodeApprovalHost } from './endpoint-service';
