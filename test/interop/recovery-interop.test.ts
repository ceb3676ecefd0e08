// Session resume and client recovery against the reference binary over a real websocket.
import { defineRecoveryScenarios } from '../support/recovery-scenarios';
import { referenceServer, startWsServer } from '../support/reference';

defineRecoveryScenarios('recovery (reference)', () => startWsServer(referenceServer));
