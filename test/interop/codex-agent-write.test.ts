// Real Codex agent turns through the reference and through ours (test/interop/codex-agent-turn.ts):
// workspace-write and danger-full-access.
import { describeModeTurns } from './codex-agent-turn';

describeModeTurns(['workspace-write', 'danger-full-access']);
