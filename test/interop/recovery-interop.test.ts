// Session resume and client recovery against the reference binary over a real websocket.
import { defineRecoveryScenarios } from '../client/recovery-scenarios';
import { referenceServer, startWsServer } from './helpers';

defineRecoveryScenarios('recovery (reference)', () => startWsServer(referenceServer));
