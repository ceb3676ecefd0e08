// environment/info, environment/status, environmentConfig/read: what the executor host is.
// Shapes follow the reference (directories as file:// URIs).
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EnvironmentConfigReadResult, EnvironmentInfo } from '../protocol/types';
import { VERSION } from '../version';
import { CAN_PIN } from './fs/confined';
import { transparentSupport } from './network/transparent';
import { pathToUri } from './paths';
import { sandboxSupport } from './sandbox/support';
import { SHELL_SNAPSHOTS } from './process/shell-snapshot';

/** Awaits the sandbox probe (./sandbox/support.ts): the capabilities are always the settled answer. */
export async function environmentInfo(): Promise<EnvironmentInfo> {
  const sandbox = await sandboxSupport();
  const shellPath = userShell();
  return {
    shell: { name: path.basename(shellPath), path: shellPath },
    executorVersion: VERSION,
    providerId: providerId(),
    cwd: pathToUri(process.cwd()),
    userHomeDir: pathToUri(os.homedir()),
    platformOs: process.platform === 'darwin' ? 'macos' : process.platform === 'win32' ? 'windows' : process.platform,
    // The reference lists its bundled-tools directory (rg), put at the front of its own PATH.
    // This server bundles no tools and changes no PATH: nothing to list.
    prependPathDirs: [],
    temporaryDirectories: [],
    tempDir: pathToUri(os.tmpdir()),
    capabilities: {
      fsWatchMissing: true,
      environmentConfigRead: true,
      // http/request header valueEnvVar (./http-headers.ts).
      httpHeaderEnvVars: true,
      // fs/open mode replace + fs/writeBlock (./fs/replace-stream.ts); fs/open honours `sandbox`
      // with the same profile as the other fs methods (./sandbox/fs-guard.ts).
      fileWriteStreaming: true,
      sandboxedFileStreaming: true,
      // capabilityRoots/discoverV1 reads each root as under its `sandbox` (./discovery/roots.ts):
      // every opened directory and file judged where /proc says it is (Linux; elsewhere a
      // sandboxed root is refused in its `error`).
      capabilityDiscoverySandbox: CAN_PIN,
      // capabilities/discoverV2 (./discovery/discover-v2.ts): this host's Codex home, read as
      // under the request's `sandbox` the same way (elsewhere a managed one is refused).
      capabilityDiscoveryV2: CAN_PIN,
      // [extension] What a managed `sandbox` gets here (docs/security.md "Managed sandbox"):
      // process/start confined by bubblewrap (false: refused with -32600, never run unconfined),
      // with our seccomp filter when the kernel took it; fs/* checked in-process against the
      // same profile (every platform).
      managedSandboxProcesses: sandbox.ok,
      managedSandboxSeccomp: sandbox.ok && sandbox.tools.seccomp !== undefined,
      managedSandboxFs: true,
      // networkProxy.proxy.credentialMasking and credentialProviders: dummies in the child, the real
      // value put back by its proxy only for the destinations it is bound to (docs/security.md
      // "Credential masking"); part of the proxy, so only where the proxy can run.
      credentialMasking: sandbox.ok,
      credentialMaskingCustomProviders: sandbox.ok,
      // process/start.networkProxy: an executor-local proxy per process, reachable only from
      // inside its sandbox's network namespace (docs/security.md "Managed network"); needs the
      // sandbox. Review domains are enforced (without the decision callback: refused).
      networkProxyLaunch: sandbox.ok,
      networkProxyReviewDomains: sandbox.ok,
      // proxy.transparentTcp: a TUN in the sandbox's namespace whose TCP the executor accepts and
      // judges as SOCKS5 CONNECTs, names through the sandbox's own resolver (./network/transparent.ts);
      // needs the helper built (native/transparent-tcp.c) and /dev/net/tun.
      networkProxyTransparentTcp: sandbox.ok && transparentSupport().ok,
      // A writable `/` still runs under bubblewrap with a fresh /dev (null, zero, full, random,
      // urandom, tty, pts, shm), and an approved root write keeps its read-only and denied paths,
      // refusing one that crosses a symlink the command could replace (./sandbox/resolve.ts,
      // writableSymlinkCrossing), as the reference does (test/interop/sandbox-root-write).
      linuxRootWritePreservesDevices: sandbox.ok,
      linuxApprovedRootWritePreservesRestrictions: sandbox.ok,
      // process/start.shellSnapshot: a login shell's profile captured once per scope and restored
      // in later starts (./process/shell-snapshot.ts; bash and sh). Built and measured on Linux only.
      shellSnapshotV2: SHELL_SNAPSHOTS,
    },
  };
}

let provider: string | undefined;
/**
 * An opaque id of this installation, as the reference's `providerId`: stable across restarts,
 * cwd and CODEX_HOME, different for another install (it hashes where this code is installed).
 */
export function providerId(): string {
  if (provider) return provider;
  let where = __dirname;
  try {
    where = realpathSync(__dirname);
  } catch {
    // keep the path as loaded
  }
  provider = `sha256:${createHash('sha256').update(`exec-server\0${where}`).digest('hex')}`;
  return provider;
}

/**
 * $SHELL, else the login shell of the user's passwd entry (as the reference: with SHELL unset,
 * e.g. a service or a CI container, it still reports bash for root), else /bin/sh.
 */
export function userShell(): string {
  if (process.env.SHELL) return process.env.SHELL;
  try {
    const fromPasswd = os.userInfo().shell;
    if (fromPasswd) return fromPasswd;
  } catch {
    // no passwd entry for this uid
  }
  return '/bin/sh';
}

export function codexHomeDir(): string {
  return process.env.CODEX_HOME || path.join(os.homedir(), '.codex');
}

/** Codex configuration layers found on this host: this server reads none (empty is valid). */
export function environmentConfig(): EnvironmentConfigReadResult {
  return {
    userHomeDir: pathToUri(os.homedir()),
    codexHomeDir: pathToUri(codexHomeDir()),
    hostname: os.hostname(),
    config: { layers: [], cloudInsertionIndex: 0 },
    requirements: { layers: [], cloudInsertionIndex: 0 },
  };
}
