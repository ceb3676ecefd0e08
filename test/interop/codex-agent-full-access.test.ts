// Real Codex agent turns through the reference and through ours (test/interop/codex-agent-turn.ts):
// danger-full-access.
import { describeModeTurns } from './codex-agent-turn';

describeModeTurns(['danger-full-access']);
