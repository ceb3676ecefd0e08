// The Codex agent turn with a network allowlist and `transparent_tcp = true`
// (./codex-network-turn.ts) with every reference that has it (0.171): that version's Codex
// against its exec-server and against ours; the pinned 0.169 has no transparent TCP.
import { describeNetworkTurn } from './codex-network-turn';
import { referenceVersions } from '../support/reference';

for (const version of referenceVersions().slice(1)) describeNetworkTurn(version, true);
