// The approval policy as other features use it: the policies and button titles, the gate for
// command lines given through the API, how agent text is shown, and the question pacer.
export { commandLine, countedRuns, shown, wrapDetail } from './display-text';
export { ALLOW, ALLOW_FOR_SESSION, APPROVAL_CHOICES, APPROVAL_POLICIES, ApprovalGate, DEFAULT_AGENT_TIMEOUT_SECONDS, DENY } from './policy';
export type { ApprovalChoice, ApprovalHost, ApprovalPolicy } from './policy';
export { QuestionPacer } from './question-pacer';
export { poseQuestion } from './question';
export type { ApprovalQuestion, PosedQuestion, QuestionAsker } from './question';
export { ALLOW_ANSWER, allowedByList, denyAnswer, describeNetworkQuestion, readAllowedDomains, timedOutText } from './network';
export type { NetworkAnswer, NetworkQuestion } from './network';
export { environmentNetworkQuestions, MAX_OPEN_NETWORK_QUESTIONS } from './network-questions';
export type { NetworkQuestionHost, UserNetworkQuestion } from './network-questions';
