// The managed-network members of process/start, decoded as the reference decodes them (codex
// 0.169, measured: docs/protocol.md "Managed network"): `networkProxy` (an executor-local proxy
// launch: RemoteNetworkProxyLaunchConfig), `managedNetwork` (a client-run proxy on this host
// whose loopback ports the sandbox should reach: ManagedNetworkSandboxContext) and
// `enforceManagedNetwork`. Malformed → -32602 with the reference's texts; what the engine does
// with a well-formed request is decided in ./start-mode.ts.
import { invalidParams } from '../../protocol/errors';
import { decodeCredentialProviders, type CustomProvider } from './credentials';
import { bool, decodeStruct, describe, isMap, optional, seqOf, str, typeError, uintOf, type FieldSpec } from '../serde-struct';

export type DomainRule = 'allow' | 'deny' | 'none';
export type ProxyMode = 'full' | 'limited';

export interface ProxyConfig {
  enabled: boolean;
  enableSocks5: boolean;
  enableSocks5Udp: boolean;
  allowUpstreamProxy: boolean;
  dangerouslyAllowAllUnixSockets: boolean;
  mode: ProxyMode;
  /** Host pattern → rule, in the order the client listed them. */
  domains: [string, DomainRule][];
  unixSockets: [string, 'allow' | 'deny'][];
  allowLocalBinding: boolean;
  /** Patterns that always go to the decision callback (networkProxyReviewDomains). */
  reviewDomains: string[];
  credentialMasking: boolean;
  /** credentialProviders (snake_case keys, as on the reference): ./credentials.ts. */
  credentialProviders: CustomProvider[];
  /** 0.171: TUN-based transparent TCP. Not advertised here (see ./start-mode.ts). */
  transparentTcp: boolean;
}

/** Attribution the executor logs with each decision (the reference's telemetry fields). */
export const AUDIT_FIELDS = ['conversationId', 'appVersion', 'userAccountId', 'authMode', 'originator', 'userEmail', 'terminalType', 'model', 'slug'] as const;
export type AuditMetadata = Partial<Record<(typeof AUDIT_FIELDS)[number], string>>;

export interface NetworkProxyLaunch {
  proxy: ProxyConfig;
  auditMetadata: AuditMetadata;
  environmentId?: string;
  executionId?: string;
  /** Present: unknown domains are asked of the client (network/policyRequest). */
  policyDecisionTimeoutMs?: number;
}

export interface ManagedNetworkContext {
  loopbackPorts: number[];
  allowLocalBinding: boolean;
  allowUnixSockets: string[];
  dangerouslyAllowAllUnixSockets: boolean;
}

function expected(values: readonly string[]): string {
  const q = values.map((v) => `\`${v}\``);
  return q.length === 2 ? `${q[0]} or ${q[1]}` : `one of ${q.join(', ')}`;
}

/** A unit-variant enum: "full", or the map form {"full": null}. */
function unitEnum<T extends string>(values: readonly T[], describeValue: (v: unknown) => string = describe) {
  return (v: unknown): T => {
    let name: unknown = v;
    if (isMap(v)) {
      const keys = Object.keys(v);
      if (keys.length !== 1) throw invalidParams(`invalid type: map, expected string or map`);
      name = keys[0];
      const inner = v[keys[0]];
      if (inner !== null) throw invalidParams(`invalid type: ${describeValue(inner)}, expected unit`);
    } else if (typeof v !== 'string') {
      throw invalidParams(`invalid type: ${describeValue(v)}, expected string or map`);
    }
    if (!(values as readonly string[]).includes(name as string)) throw invalidParams(`unknown variant \`${String(name)}\`, expected ${expected(values)}`);
    return name as T;
  };
}

/** How the reference describes a value it decodes through an intermediate JSON value (integers named). */
function describeValue(v: unknown): string {
  if (typeof v === 'number') return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  return describe(v);
}

function mapOf<T>(d: (v: unknown) => T, describeFn: (v: unknown) => string = describe) {
  return (v: unknown): [string, T][] => {
    if (!isMap(v)) throw invalidParams(`invalid type: ${describeFn(v)}, expected a map`);
    return Object.entries(v).map(([k, x]) => [k, d(x)] as [string, T]);
  };
}

const PROXY_FIELDS: FieldSpec[] = [
  { name: 'enabled', decode: bool, required: true },
  { name: 'enableSocks5', decode: bool, required: true },
  { name: 'enableSocks5Udp', decode: bool, required: true },
  { name: 'allowUpstreamProxy', decode: bool, required: true },
  { name: 'dangerouslyAllowAllUnixSockets', decode: bool, required: true },
  { name: 'mode', decode: unitEnum(['limited', 'full'] as const), required: true },
  { name: 'domains', decode: optional(mapOf(unitEnum(['none', 'allow', 'deny'] as const))) },
  { name: 'unixSockets', decode: optional(mapOf(unitEnum(['allow', 'deny'] as const, describeValue), describeValue)) },
  { name: 'allowLocalBinding', decode: bool, required: true },
  { name: 'reviewDomains', decode: seqOf(str) },
  { name: 'credentialMasking', decode: bool },
  { name: 'credentialProviders', decode: optional((v) => decodeCredentialProviders(v, describeValue)) },
  { name: 'transparentTcp', decode: bool },
];

const AUDIT_SPEC: FieldSpec[] = AUDIT_FIELDS.map((name) => ({ name, decode: optional(str) }));

function policyTimeout(v: unknown): number | undefined {
  if (v === null) return undefined;
  const n = uintOf('u64', Number.MAX_SAFE_INTEGER)(v);
  if (n === 0) throw invalidParams('network policy decision callback timeout must be nonzero');
  return n;
}

const LAUNCH_FIELDS: FieldSpec[] = [
  { name: 'proxy', decode: (v) => decodeStruct(v, 'RemoteNetworkProxyConfig', PROXY_FIELDS, { seq: false }), required: true },
  { name: 'auditMetadata', decode: (v) => decodeStruct(v, 'NetworkProxyAuditMetadata', AUDIT_SPEC) },
  { name: 'environmentId', decode: optional(str) },
  { name: 'executionId', decode: optional(str) },
  { name: 'policyDecisionTimeoutMs', decode: policyTimeout },
];

/** `networkProxy` (absent or null → undefined). */
export function decodeNetworkProxy(raw: unknown): NetworkProxyLaunch | undefined {
  if (raw === undefined || raw === null) return undefined;
  const o = decodeStruct(raw, 'RemoteNetworkProxyLaunchConfig', LAUNCH_FIELDS);
  const p = o.proxy as Record<string, unknown>;
  if (p.enabled !== true) throw invalidParams('invalid network proxy config: executor-local network proxy launch requires an enabled proxy');
  const proxy: ProxyConfig = {
    enabled: true,
    enableSocks5: p.enableSocks5 as boolean,
    enableSocks5Udp: p.enableSocks5Udp as boolean,
    allowUpstreamProxy: p.allowUpstreamProxy as boolean,
    dangerouslyAllowAllUnixSockets: p.dangerouslyAllowAllUnixSockets as boolean,
    mode: p.mode as ProxyMode,
    domains: (p.domains as [string, DomainRule][] | undefined) ?? [],
    unixSockets: (p.unixSockets as [string, 'allow' | 'deny'][] | undefined) ?? [],
    allowLocalBinding: p.allowLocalBinding as boolean,
    reviewDomains: (p.reviewDomains as string[] | undefined) ?? [],
    credentialMasking: (p.credentialMasking as boolean | undefined) ?? false,
    credentialProviders: (p.credentialProviders as CustomProvider[] | undefined) ?? [],
    transparentTcp: (p.transparentTcp as boolean | undefined) ?? false,
  };
  const auditMetadata: AuditMetadata = {};
  for (const [k, v] of Object.entries((o.auditMetadata as Record<string, unknown> | undefined) ?? {})) {
    if (typeof v === 'string') auditMetadata[k as keyof AuditMetadata] = v;
  }
  return {
    proxy,
    auditMetadata,
    environmentId: o.environmentId as string | undefined,
    executionId: o.executionId as string | undefined,
    policyDecisionTimeoutMs: o.policyDecisionTimeoutMs as number | undefined,
  };
}

const MANAGED_FIELDS: FieldSpec[] = [
  { name: 'loopbackPorts', decode: seqOf(uintOf('u16', 65535)) },
  { name: 'allowLocalBinding', decode: bool },
  { name: 'allowUnixSockets', decode: seqOf(str) },
  { name: 'dangerouslyAllowAllUnixSockets', decode: bool },
];

/** `managedNetwork` (absent or null → undefined; every field optional). */
export function decodeManagedNetwork(raw: unknown): ManagedNetworkContext | undefined {
  if (raw === undefined || raw === null) return undefined;
  const o = decodeStruct(raw, 'ManagedNetworkSandboxContext', MANAGED_FIELDS);
  return {
    loopbackPorts: (o.loopbackPorts as number[] | undefined) ?? [],
    allowLocalBinding: (o.allowLocalBinding as boolean | undefined) ?? false,
    allowUnixSockets: (o.allowUnixSockets as string[] | undefined) ?? [],
    dangerouslyAllowAllUnixSockets: (o.dangerouslyAllowAllUnixSockets as boolean | undefined) ?? false,
  };
}

/** `enforceManagedNetwork`: a bool when present (null is refused, as on the reference). */
export function decodeEnforce(o: Record<string, unknown>): boolean {
  const v = o.enforceManagedNetwork;
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw typeError(v, 'a boolean');
  return v;
}
