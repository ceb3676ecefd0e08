// The Codex agent turn with a network allowlist (./codex-network-turn.ts) with every newer
// reference (0.171): that version's Codex against its exec-server and against ours.
import { describeNetworkTurn } from './codex-network-turn';
import { referenceVersions } from '../support/reference';

for (const version of referenceVersions().slice(1)) describeNetworkTurn(version);
