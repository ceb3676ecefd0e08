// The extension's settings: one typed snapshot of every execServer.* setting, and one owner
// that re-reads it when the host reports a configuration change (or after writing a value
// itself) and tells its listeners which settings changed. Every setting is read from the
// user (global) scope only — the source given here must return the user value or the
// default, never a workspace/folder value: an agent can write workspace files, so they must
// not loosen the approval policy or add commands to run (docs/security.md, "Boundaries").
// No VS Code import: src/extension/common/ui/settings.ts binds it to vscode.workspace.
import { Emitter, type Event } from '../../rpc/event';
import { APPROVAL_POLICIES, DEFAULT_AGENT_TIMEOUT_SECONDS, readAllowedDomains, type ApprovalPolicy } from '../approval';
import type { TelemetrySettings } from './request-telemetry';

export interface ExtensionSettings {
  /** execServer.environments as stored (EnvironmentStore validates the entries). */
  environments: unknown;
  approvalPolicy: ApprovalPolicy;
  approvalTimeoutMs: number;
  sandboxAgentCommands: boolean;
  /** execServer.network.allowedDomains: hosts an agent's sandboxed command may reach without a question (valid patterns only). */
  networkAllowedDomains: string[];
  /** 0 = a free port. */
  agentEndpointPort: number;
  telemetry: TelemetrySettings;
  /** Connect to Host: the ssh binary ('' = ssh on PATH) and `ssh -F` file ('' = ~/.ssh/config). */
  ssh: { path: string; configFile: string; keepSessionSec: number };
  /** Connect to Container: the engine CLI ('auto', podman, docker, a path) and its context; kubectl and its context ('' = defaults). */
  containers: { cli: string; context: string; kubectl: string; kubeContext: string };
}

/** Setting keys (under "execServer.") and the field of ExtensionSettings each one feeds. */
export const SETTING_KEYS = {
  environments: 'environments',
  'approval.policy': 'approvalPolicy',
  'approval.timeoutSeconds': 'approvalTimeoutMs',
  'approval.sandboxAgentCommands': 'sandboxAgentCommands',
  'network.allowedDomains': 'networkAllowedDomains',
  'agentEndpoint.port': 'agentEndpointPort',
  'tracing.otlpEndpoint': 'telemetry',
  'tracing.otlpProtocol': 'telemetry',
  // The former names (VS Code's Settings editor filed them under "Telemetry", which is about
  // usage data sent to Microsoft): still read when the new ones are not set.
  'telemetry.otlpEndpoint': 'telemetry',
  'telemetry.otlpProtocol': 'telemetry',
  'ssh.path': 'ssh',
  'ssh.configFile': 'ssh',
  'ssh.keepSessionSeconds': 'ssh',
  'containers.cli': 'containers',
  'containers.context': 'containers',
  'kubernetes.kubectlPath': 'containers',
  'kubernetes.context': 'containers',
} as const satisfies Record<string, keyof ExtensionSettings>;
export type SettingKey = keyof typeof SETTING_KEYS;

/** Declared in package.json but never read: the endpoint binds 127.0.0.1 whatever it says. */
export const DECLARED_ONLY_SETTINGS = ['agentEndpoint.host'] as const;

/** A setting's user value, else its default (undefined when neither). */
export type UserSettingSource = (key: SettingKey) => unknown;

const text = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
/** execServer.ssh.keepSessionSeconds: whole seconds 30–86400, else the --detach default (300). */
export const DEFAULT_KEEP_SESSION_SEC = 300;
const keepSession = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 30 && v <= 86_400 ? v : DEFAULT_KEEP_SESSION_SEC);

/** The snapshot a source describes; a value of the wrong type or range reads as the default. */
export function readSettings(source: UserSettingSource): ExtensionSettings {
  const policy = source('approval.policy');
  const timeout = source('approval.timeoutSeconds');
  const port = source('agentEndpoint.port');
  // execServer.tracing.* wins; the deprecated execServer.telemetry.* pair counts only when no new endpoint is set.
  const fresh = text(source('tracing.otlpEndpoint'));
  const legacy = fresh ? '' : text(source('telemetry.otlpEndpoint'));
  const endpoint = fresh || legacy;
  const protocol = source(legacy ? 'telemetry.otlpProtocol' : 'tracing.otlpProtocol');
  return {
    environments: source('environments'),
    approvalPolicy: (APPROVAL_POLICIES as readonly unknown[]).includes(policy) ? (policy as ApprovalPolicy) : 'askOutsideWorkspace',
    approvalTimeoutMs: (typeof timeout === 'number' && timeout > 0 ? timeout : DEFAULT_AGENT_TIMEOUT_SECONDS) * 1000,
    sandboxAgentCommands: source('approval.sandboxAgentCommands') === true,
    networkAllowedDomains: readAllowedDomains(source('network.allowedDomains')),
    agentEndpointPort: typeof port === 'number' && Number.isInteger(port) && port >= 0 && port < 65536 ? port : 0,
    telemetry: {
      otlpEndpoint: endpoint,
      otlpProtocol: protocol === 'http/json' ? 'http/json' : 'http/protobuf',
    },
    ssh: { path: text(source('ssh.path')), configFile: text(source('ssh.configFile')), keepSessionSec: keepSession(source('ssh.keepSessionSeconds')) },
    containers: {
      cli: text(source('containers.cli')) || 'auto',
      context: text(source('containers.context')),
      kubectl: text(source('kubernetes.kubectlPath')),
      kubeContext: text(source('kubernetes.context')),
    },
  };
}

export interface SettingsChange {
  /** The fields whose value differs from the previous snapshot (never empty). */
  changed: ReadonlySet<keyof ExtensionSettings>;
  previous: ExtensionSettings;
  current: ExtensionSettings;
}

export class SettingsOwner {
  private snapshot: ExtensionSettings;
  private readonly emitter = new Emitter<SettingsChange>();
  /** Fires once per actual change, whether VS Code reported it or write() made it. */
  readonly onDidChange: Event<SettingsChange> = this.emitter.event;

  constructor(
    private readonly source: UserSettingSource,
    private readonly writer: (key: SettingKey, value: unknown) => Promise<void>,
  ) {
    this.snapshot = readSettings(source);
  }

  get current(): ExtensionSettings {
    return this.snapshot;
  }

  /**
   * Re-reads the source (the host calls this on every configuration change of the section).
   * Fires only if a value differs, so a change seen twice (write() then the host's event) fires once.
   */
  refresh(): void {
    const previous = this.snapshot;
    const current = readSettings(this.source);
    const changed = new Set<keyof ExtensionSettings>();
    for (const field of Object.keys(current) as (keyof ExtensionSettings)[]) {
      if (JSON.stringify(current[field]) !== JSON.stringify(previous[field])) changed.add(field);
    }
    this.snapshot = current;
    if (changed.size) this.emitter.fire({ changed, previous, current });
  }

  /** Writes a user setting, then refreshes: listeners see the change before this resolves. */
  async write(key: SettingKey, value: unknown): Promise<void> {
    await this.writer(key, value);
    this.refresh();
  }

  dispose(): void {
    this.emitter.dispose();
  }
}
