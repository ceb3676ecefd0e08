// environment/info, environment/status, environmentConfig/read: what the executor host is.
// Shapes follow the reference (directories as file:// URIs).
import os from 'node:os';
import path from 'node:path';
import type { EnvironmentConfigReadResult, EnvironmentInfo } from '../protocol/types';
import { VERSION } from '../version';
import { pathToUri } from './paths';
import { sandboxSupport } from './sandbox/support';

/** Awaits the sandbox probe (./sandbox/support.ts): the capabilities are always the settled answer. */
export async function environmentInfo(): Promise<EnvironmentInfo> {
  const sandbox = await sandboxSupport();
  const shellPath = userShell();
  return {
    shell: { name: path.basename(shellPath), path: shellPath },
    executorVersion: VERSION,
    cwd: pathToUri(process.cwd()),
    userHomeDir: pathToUri(os.homedir()),
    platformOs: process.platform === 'darwin' ? 'macos' : process.platform === 'win32' ? 'windows' : process.platform,
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
      // [extension] What a managed `sandbox` gets here (docs/security.md "Managed sandbox"):
      // process/start confined by bubblewrap (false: refused with -32600, never run unconfined),
      // with our seccomp filter when the kernel took it; fs/* checked in-process against the
      // same profile (every platform).
      managedSandboxProcesses: sandbox.ok,
      managedSandboxSeccomp: sandbox.ok && sandbox.tools.seccomp !== undefined,
      managedSandboxFs: true,
      // process/start.networkProxy: an executor-local proxy per process, reachable only from
      // inside its sandbox's network namespace (docs/security.md "Managed network"); needs the
      // sandbox. Review domains are enforced (without the decision callback: refused).
      networkProxyLaunch: sandbox.ok,
      networkProxyReviewDomains: sandbox.ok,
    },
  };
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
