// Real Codex agent turns through the reference and through ours (test/interop/codex-agent-turn.ts):
// the newer reference versions (workspace-write, with that version's Codex client).
import { describeNewerVersionTurns } from './codex-agent-turn';

describeNewerVersionTurns();
