// The Codex agent turn with a network allowlist (./codex-network-turn.ts) with the pinned
// reference (0.169): its Codex against its exec-server and against ours, same outcome.
import { describeNetworkTurn } from './codex-network-turn';
import { pinnedReferenceVersion } from '../support/reference';

describeNetworkTurn(pinnedReferenceVersion());
