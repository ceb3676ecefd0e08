// The approval policy as other features use it: the policies and button titles, the gate for
// command lines given through the API, how agent text is shown, and the question pacer.
export { commandLine, shown } from './display-text';
export { ALLOW, ALLOW_FOR_SESSION, APPROVAL_CHOICES, APPROVAL_POLICIES, ApprovalGate, DEFAULT_AGENT_TIMEOUT_SECONDS, DENY } from './policy';
export type { ApprovalChoice, ApprovalHost, ApprovalPolicy } from './policy';
export { QuestionPacer } from './question-pacer';
