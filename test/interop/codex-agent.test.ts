// Real Codex agent turns through the reference and through ours (test/interop/codex-agent-turn.ts):
// Codex's default mode.
import { describeModeTurns } from './codex-agent-turn';

describeModeTurns([undefined]);
