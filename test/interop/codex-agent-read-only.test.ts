// Real Codex agent turns through the reference and through ours (test/interop/codex-agent-turn.ts):
// read-only.
import { describeModeTurns } from './codex-agent-turn';

describeModeTurns(['read-only']);
