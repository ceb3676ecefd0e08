// Real Codex agent turns through the reference and through ours (test/interop/codex-agent-turn.ts):
// workspace-write.
import { describeModeTurns } from './codex-agent-turn';

describeModeTurns(['workspace-write']);
