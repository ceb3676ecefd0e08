// One policy evaluation for one proxied connection: the baseline (./policy.ts), the client's
// decision callback for `not_allowed` (network/policyRequest, when the launch asked for it), the
// DNS lookup with its local-address check, the limited-mode guard; one network/policyDecision
// per verdict (REFERENCE §1.6). An allowed name comes back with the addresses it was judged by:
// the connection goes to exactly those (a name re-pointed after the check reaches nothing new).
import type { ProxyConfig } from './launch-config';
import { blockedResponse, judgeHost, modeGuard, normalizeHost, resolvedIsLocal, type Protocol, type Source } from './policy';
import type { ResolvedAddress, Resolver } from './resolve';

export interface PolicyDecisionParams {
  processId: string;
  timestamp: string;
  scope: 'domain';
  decision: 'allow' | 'deny' | 'ask';
  source: Source;
  reason: string;
  protocol: Protocol;
  host: string;
  port: number;
  method?: string;
  client: string;
  policyOverride: boolean;
}

/** The client's answer to network/policyRequest, already validated (./callback.ts). */
export type CallbackAnswer = { type: 'allow' } | { type: 'deny' | 'ask'; reason: string } | { type: 'invalid' };

export interface DecisionHost {
  readonly processId: string;
  readonly config: ProxyConfig;
  notify(params: PolicyDecisionParams): void;
  /** Present when the launch carried policyDecisionTimeoutMs. */
  ask?: (request: { protocol: Protocol; host: string; port: number }) => Promise<CallbackAnswer>;
  resolve: Resolver;
}

export interface Target {
  protocol: Protocol;
  host: string;
  port: number;
  method?: string;
  client: string;
}

export type Outcome =
  | { ok: true; addresses: ResolvedAddress[] }
  | { ok: false; reason: string; source: Source; decision: 'deny' | 'ask'; header: string; message: string; upstreamFailure?: boolean };

export async function decide(h: DecisionHost, t: Target): Promise<Outcome> {
  const host = normalizeHost(t.host);
  const emit = (decision: 'allow' | 'deny' | 'ask', source: Source, reason: string, policyOverride = false) =>
    h.notify({
      processId: h.processId,
      timestamp: new Date().toISOString(),
      scope: 'domain',
      decision,
      source,
      reason,
      protocol: t.protocol,
      host: t.host,
      port: t.port,
      ...(t.method !== undefined ? { method: t.method } : {}),
      client: t.client,
      policyOverride,
    });
  const refuse = (reason: string, source: Source, decision: 'deny' | 'ask' = 'deny'): Outcome => {
    emit(decision, source, reason);
    return { ok: false, reason, source, decision, ...blockedResponse(reason, source, decision) };
  };
  const verdict = judgeHost(h.config, host);
  if (verdict.kind === 'deny') return refuse(verdict.reason, 'baseline_policy');
  let override = false;
  let literal = verdict.kind === 'allow' && verdict.literalAllowed;
  if (verdict.kind === 'notAllowed') {
    if (!h.ask) return refuse('not_allowed', 'baseline_policy');
    const answer = await h.ask({ protocol: t.protocol, host: t.host, port: t.port });
    if (answer.type === 'invalid') return refuse('not_allowed', 'decider');
    if (answer.type !== 'allow') return refuse(answer.reason, 'decider', answer.type);
    override = true;
    literal = false;
  }
  // Names are looked up once; the connection uses these addresses and no later answer.
  let addresses: ResolvedAddress[];
  try {
    addresses = await h.resolve(host);
  } catch {
    addresses = [];
  }
  // A name that does not resolve is refused as a local one, as the reference does ("DNS lookup
  // failed during local/private IP check"): nothing proves it is not local.
  const unresolved = addresses.length === 0 && !h.config.allowLocalBinding;
  if (!literal && (unresolved || resolvedIsLocal(h.config, addresses.map((a) => a.address)))) return refuse('not_allowed_local', override ? 'decider' : 'baseline_policy');
  emit('allow', override ? 'decider' : 'baseline_policy', override ? 'not_allowed' : 'allow', override);
  const guard = modeGuard(h.config, t.protocol, t.method);
  if (guard) return refuse(guard, 'mode_guard');
  return { ok: true, addresses };
}
