// Wire types of the exec-server protocol (see docs/protocol.md).
// This file is shared by server, client and extension: no Node or VS Code types here.
// Byte payloads are base64 strings on the wire, as in the reference implementation.

/** A `file://` URI, or (server-side extension) a plain absolute path. */
export type WireUri = string;
export type RequestId = number | string;

export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

// ---------------------------------------------------------------- lifecycle

export interface InitializeParams {
  clientName: string;
  resumeSessionId?: string | null;
  /** [extension] Opt in to per-process flow control on this connection (see docs/protocol.md, "Flow control"). */
  flowControl?: boolean;
  /** [extension] Opt in to binary process/output frames on this connection (websocket only; see docs/protocol.md). */
  binaryOutput?: boolean;
}
export interface InitializeResult {
  sessionId: string;
  environmentInfo?: EnvironmentInfo;
  /** [extension] Methods beyond the reference that this server implements. */
  extensions?: string[];
  serverName?: string;
  serverVersion?: string;
}

// ---------------------------------------------------------------- processes

export type OutputStream = 'stdout' | 'stderr' | 'pty';

export interface EnvPolicy {
  inherit?: 'all' | 'core' | 'none';
  ignoreDefaultExcludes?: boolean;
  exclude?: string[];
  set?: Record<string, string>;
  includeOnly?: string[];
}

export interface ProcessStartParams {
  processId: string;
  argv: string[];
  cwd: WireUri;
  env: Record<string, string>;
  tty: boolean;
  pipeStdin?: boolean;
  arg0?: string | null;
  sandbox?: unknown;
  envPolicy?: EnvPolicy | null;
  enforceManagedNetwork?: boolean;
  managedNetwork?: unknown;
  /** [extension] initial PTY size */
  rows?: number;
  cols?: number;
  /**
   * [extension `flowControl`] Unacknowledged output bytes the client grants this process; the
   * server stops reading the child while that many are unacknowledged (process/ack). 0/absent: none.
   */
  outputWindow?: number;
}
/** `error.data.kind` of a failed process/start (reference 0.171; 0.169 sends no `data`). */
export type SpawnErrorKind = 'spawnNotFound' | 'spawnPermissionDenied' | 'spawnFailed' | 'sandboxUnavailable' | 'sandboxPreparation';
export interface ProcessStartErrorData {
  kind: SpawnErrorKind;
}
export interface ProcessStartResult {
  processId: string;
  sandboxType?: string;
}

export interface ProcessOutputNotification {
  processId: string;
  seq: number;
  stream: OutputStream;
  chunk: string;
}
export interface ProcessExitedNotification {
  processId: string;
  seq: number;
  exitCode: number;
  sandboxDenied: boolean;
}
export interface ProcessClosedNotification {
  processId: string;
  seq: number;
}

export interface ProcessReadParams {
  processId: string;
  afterSeq?: number | null;
  maxBytes?: number | null;
  waitMs?: number | null;
}
export interface ProcessOutputChunk {
  seq: number;
  stream: OutputStream;
  chunk: string;
}
export interface ProcessReadResult {
  chunks: ProcessOutputChunk[];
  nextSeq: number;
  exited: boolean;
  exitCode: number | null;
  closed: boolean;
  failure: string | null;
  sandboxDenied: boolean;
  /**
   * [extension] Highest seq dropped from retention by the 1 MiB cap (0 = none). A reader
   * that asked for `afterSeq < evictedThroughSeq` has lost output. Absent on the reference.
   */
  evictedThroughSeq?: number;
  /**
   * [extension] Byte offset, in everything the process has output, of the oldest retained
   * chunk: a client adopting the process (a window reload re-attaching its terminal) starts
   * its flow-control byte count there, so its acks match the server's. Absent on the reference.
   */
  retainedFromByte?: number;
}

export interface ProcessWriteParams {
  processId: string;
  chunk: string;
  writeId: string;
}
export type WriteStatus = 'accepted' | 'unknownProcess' | 'stdinClosed' | 'starting';
export interface ProcessWriteResult {
  status: WriteStatus;
}

export interface ProcessSignalParams {
  processId: string;
  signal: 'interrupt';
}
export interface ProcessTerminateParams {
  processId: string;
}
export interface ProcessTerminateResult {
  running: boolean;
}
/** [extension] */
export interface ProcessResizeParams {
  processId: string;
  rows: number;
  cols: number;
}
/** [extension] */
export interface ProcessCloseStdinParams {
  processId: string;
}
/** [extension `flowControl`] Total output bytes of the process consumed so far (monotonic; a lower value is ignored). */
export interface ProcessAckParams {
  processId: string;
  consumedBytes: number;
}

// ---------------------------------------------------------------- filesystem

export interface FsPathParams {
  path: WireUri;
  sandbox?: unknown;
}
export interface FsReadFileResult {
  dataBase64: string;
}
export interface FsWriteFileParams extends FsPathParams {
  dataBase64: string;
}
export interface FsCreateDirectoryParams extends FsPathParams {
  recursive?: boolean | null;
}
export interface FsMetadata {
  isDirectory: boolean;
  isFile: boolean;
  isSymlink: boolean;
  size: number;
  createdAtMs: number;
  modifiedAtMs: number;
}
export interface FsCanonicalizeResult {
  path: WireUri;
}
export interface FsDirectoryEntry {
  fileName: string;
  isDirectory: boolean;
  isFile: boolean;
}
export interface FsReadDirectoryResult {
  entries: FsDirectoryEntry[];
}
export interface FsRemoveParams extends FsPathParams {
  recursive?: boolean | null;
  force?: boolean | null;
}
export interface FsCopyParams {
  sourcePath: WireUri;
  destinationPath: WireUri;
  recursive: boolean;
  sandbox?: unknown;
}
export interface FsWalkOptions {
  maxDepth: number;
  maxDirectories: number;
  maxEntries: number;
  followDirectorySymlinks: boolean;
  pruneHiddenDirectories?: boolean;
}
export interface FsWalkParams extends FsPathParams {
  options: FsWalkOptions;
}
export type FsWalkKind = 'file' | 'directory' | 'symlink' | 'other';
export interface FsWalkResult {
  entries: { path: WireUri; kind: FsWalkKind }[];
  errors: { path: WireUri; message: string }[];
  truncated: boolean;
}
export interface FsOpenParams extends FsPathParams {
  handleId: string;
  /** [fileWriteStreaming] `read` (default) or `replace`: fs/writeBlock, then fs/close replaces the file atomically (this server; the reference truncates in place). */
  mode?: 'read' | 'replace';
}
export interface FsWriteBlockParams {
  handleId: string;
  offset: number;
  /** base64, 1..MAX_WRITE_BLOCK bytes; [extension binaryOutput] the bytes themselves (a kind 3 binary frame, or in process) to a server that enabled binaryOutput. */
  chunk: string | Uint8Array;
}
export interface FsOpenResult {
  handleId: string;
}
export interface FsReadBlockParams {
  handleId: string;
  offset: number;
  len: number;
}
export interface FsReadBlockResult {
  /** base64; [extension binaryOutput] the bytes themselves on a connection that negotiated binaryOutput. */
  chunk: string | Uint8Array;
  eof: boolean;
}
export interface FsCloseParams {
  handleId: string;
}
/** [extension] */
export interface FsRenameParams {
  sourcePath: WireUri;
  destinationPath: WireUri;
  overwrite?: boolean | null;
  sandbox?: unknown;
}
/** [extension] */
export interface FsWatchParams {
  watchId: string;
  path: WireUri;
  recursive?: boolean | null;
}
export interface FsWatchResult {
  watchId: string;
}
export interface FsUnwatchParams {
  watchId: string;
}
export type FsChangeKind = 'created' | 'changed' | 'deleted';
/** [extension] notification */
export interface FsChangedNotification {
  watchId: string;
  changes: { path: WireUri; kind: FsChangeKind }[];
}

/** Sent by the real Codex client (protocol §6a); `fs/missingChanged` follows once a missing path appears. */
export interface FsWatchMissingParams {
  watchId: number;
  missing: WireUri[];
  present?: string | null;
}
export interface FsWatchMissingResult {
  /** false: not registered (the id is taken or the per-connection budget is spent). */
  watching: boolean;
}

/** Reference notification following `fs/watchMissing` (the Codex client's config discovery). */
export interface FsMissingChangedNotification {
  watchId: number;
}

// ---------------------------------------------------------------- environment / http

export interface EnvironmentInfo {
  shell: { name: string; path: string };
  cwd?: string;
  executorVersion?: string;
  platformOs?: string;
  userHomeDir?: string;
  tempDir?: string;
  capabilities?: Record<string, unknown>;
  [key: string]: unknown;
}
export interface EnvironmentStatus {
  status: 'ready';
}
/** Sent by the real Codex client (protocol §6a): the Codex configuration found on the executor host. */
export interface EnvironmentConfigReadParams {
  cwd: WireUri;
  configPaths: WireUri[];
  requirementsPaths: WireUri[];
}
export interface EnvironmentConfigLayers {
  layers: unknown[];
  cloudInsertionIndex: number;
}
export interface EnvironmentConfigReadResult {
  userHomeDir: WireUri;
  codexHomeDir: WireUri;
  hostname: string;
  config: EnvironmentConfigLayers;
  requirements: EnvironmentConfigLayers;
}

export interface HttpHeader {
  name: string;
  /** With valueEnvVar: the prefix of the value (e.g. "Bearer "). */
  value: string;
  /** [httpHeaderEnvVars] An environment variable of the executor whose value is appended to `value`; unset or empty → -32602, nothing sent. */
  valueEnvVar?: string;
}
export interface HttpRequestParams {
  method: string;
  url: string;
  headers: HttpHeader[];
  bodyBase64?: string | null;
  timeoutMs?: number | null;
  redirectPolicy?: 'follow' | 'stop';
  requestId: string;
  streamResponse?: boolean;
}
export interface HttpRequestResult {
  status: number;
  headers: HttpHeader[];
  bodyBase64: string;
}
export interface HttpBodyDeltaNotification {
  requestId: string;
  seq: number;
  deltaBase64: string;
  done: boolean;
  error?: string | null;
}

// ---------------------------------------------------------------- method maps

/** capabilityRoots/discoverV1 (capabilityDiscoverySandbox): what each root holds, files materialized verbatim. */
export interface CapabilityRootRequest {
  id: string;
  path: WireUri;
  /** A FileSystemSandboxContext (permissions + windowsSandboxLevel, ...): the root is read as under it. */
  sandbox?: unknown;
}
export interface CapabilityRootsDiscoverParams {
  roots: CapabilityRootRequest[];
}
/** A file found in a root, its contents as text. */
export interface CapabilityFile {
  path: WireUri;
  contents: string;
}
export interface CapabilityRootResult {
  id: string;
  path: WireUri;
  plugin: { manifest: CapabilityFile; mcpConfig: CapabilityFile | null; appsConfig: CapabilityFile | null } | null;
  skills: { instructions: CapabilityFile; metadata: CapabilityFile | null }[];
  namespaceManifests: CapabilityFile[];
  warnings: string[];
  /** The root's own failure (missing, not a directory, not visible under its sandbox); never fails the call. */
  error: string | null;
}
export interface CapabilityRootsDiscoverResult {
  roots: CapabilityRootResult[];
}

/** capabilities/discoverV2 (capabilityDiscoveryV2): the host's Codex skills and installed plugins, parsed. */
export interface DiscoverV2Params {
  cwd: WireUri;
  /** A FileSystemSandboxContext: discovery reads as a process under it would. */
  sandbox?: unknown;
}
export interface ExecutorSkillInfo {
  name: string;
  description: string;
  shortDescription: string | null;
  path: WireUri;
  /** Standalone skills only (`codex-home-skills`, `user-agent-skills`); a plugin's skills have none. */
  discoveryRoot?: { id: string; path: WireUri };
  dependencies: { tools: { type: string; value: string; description: string | null; transport: string | null; command: string | null; url: string | null; oauthCallbackPort: number | null }[] } | null;
  policy: { allowImplicitInvocation: boolean | null; products: string[] } | null;
}
export interface ExecutorPluginInfo {
  id: string;
  displayName: string;
  remotePluginId: string | null;
  version: string;
  root: WireUri;
  files: NonNullable<CapabilityRootResult['plugin']>;
  skills: ExecutorSkillInfo[];
}
export interface DiscoverV2Result {
  plugins: ExecutorPluginInfo[];
  skills: ExecutorSkillInfo[];
  warnings: string[];
}

/**
 * Requests: method name → [params, result]. The server's method table is typed by it (a handler
 * answering another shape does not compile: src/server/methods/spec.ts); the runtime list of
 * names is REQUEST_METHODS in ./methods.ts.
 */
export interface RequestMap {
  initialize: [InitializeParams, InitializeResult];
  'process/start': [ProcessStartParams, ProcessStartResult];
  'process/read': [ProcessReadParams, ProcessReadResult];
  'process/write': [ProcessWriteParams, ProcessWriteResult];
  'process/signal': [ProcessSignalParams, Record<string, never>];
  'process/terminate': [ProcessTerminateParams, ProcessTerminateResult];
  'process/resize': [ProcessResizeParams, Record<string, never>];
  'process/closeStdin': [ProcessCloseStdinParams, Record<string, never>];
  'process/ack': [ProcessAckParams, Record<string, never>];
  'fs/readFile': [FsPathParams, FsReadFileResult];
  'fs/writeFile': [FsWriteFileParams, Record<string, never>];
  'fs/createDirectory': [FsCreateDirectoryParams, Record<string, never>];
  'fs/getMetadata': [FsPathParams, FsMetadata];
  'fs/canonicalize': [FsPathParams, FsCanonicalizeResult];
  'fs/readDirectory': [FsPathParams, FsReadDirectoryResult];
  'fs/remove': [FsRemoveParams, Record<string, never>];
  'fs/copy': [FsCopyParams, Record<string, never>];
  'fs/walk': [FsWalkParams, FsWalkResult];
  'fs/open': [FsOpenParams, FsOpenResult];
  'fs/readBlock': [FsReadBlockParams, FsReadBlockResult];
  'fs/writeBlock': [FsWriteBlockParams, Record<string, never>];
  'fs/close': [FsCloseParams, Record<string, never>];
  'fs/rename': [FsRenameParams, Record<string, never>];
  'fs/watch': [FsWatchParams, FsWatchResult];
  'fs/unwatch': [FsUnwatchParams, Record<string, never>];
  'fs/watchMissing': [FsWatchMissingParams, FsWatchMissingResult];
  'environment/info': [Record<string, never> | null, EnvironmentInfo];
  'environment/status': [Record<string, never> | null, EnvironmentStatus];
  'environmentConfig/read': [EnvironmentConfigReadParams, EnvironmentConfigReadResult];
  'http/request': [HttpRequestParams, HttpRequestResult];
  'capabilityRoots/discoverV1': [CapabilityRootsDiscoverParams, CapabilityRootsDiscoverResult];
  'capabilities/discoverV2': [DiscoverV2Params, DiscoverV2Result];
}
export type RequestMethod = keyof RequestMap;
export type ParamsOf<M extends RequestMethod> = RequestMap[M][0];
export type ResultOf<M extends RequestMethod> = RequestMap[M][1];

/** Server → client notifications. */
export interface NotificationMap {
  'process/output': ProcessOutputNotification;
  'process/exited': ProcessExitedNotification;
  'process/closed': ProcessClosedNotification;
  'fs/changed': FsChangedNotification;
  'http/request/bodyDelta': HttpBodyDeltaNotification;
  /** Sent once after `fs/watchMissing` when one of the missing paths appeared (reference shape). */
  'fs/missingChanged': FsMissingChangedNotification;
  /** One managed-proxy policy evaluation (networkProxyLaunch; 12 fields, as the reference). */
  'network/policyDecision': NetworkPolicyDecisionNotification;
}

export interface NetworkPolicyDecisionNotification {
  processId: string;
  timestamp: string;
  scope: 'domain';
  decision: 'allow' | 'deny' | 'ask';
  source: 'baseline_policy' | 'mode_guard' | 'decider';
  reason: string;
  protocol: 'http' | 'https_connect' | 'socks5_tcp' | 'socks5_udp';
  host: string;
  port: number;
  /** Absent for SOCKS5. */
  method?: string;
  client: string;
  policyOverride: boolean;
}
export type NotificationMethod = keyof NotificationMap;

/** Methods this project implements beyond the reference (feature-detected by clients). */
export const EXTENSION_METHODS = [
  'process/resize',
  'process/closeStdin',
  'fs/rename',
  'fs/watch',
  'fs/unwatch',
  'process/ack',
] as const satisfies readonly (keyof RequestMap)[];
export type ExtensionMethod = (typeof EXTENSION_METHODS)[number];

/**
 * [extension] Connection features a client opts in to in `initialize` params; the server lists
 * in `extensions` those it enabled for this connection (next to EXTENSION_METHODS).
 */
export const FLOW_CONTROL_EXTENSION = 'flowControl';
export const BINARY_OUTPUT_EXTENSION = 'binaryOutput';
