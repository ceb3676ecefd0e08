// Shared helpers for tests that run real server processes (our CLI, the reference binary).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { TestContext } from 'node:test';
import { cliPath, repoRoot, startServerProcess, type ServerProcess } from './cli';

export { cliPath, repoRoot } from './cli';

/**
 * The reference versions the interop suite runs against (scripts/tools/reference-versions.json):
 * the pinned baseline first — replaced by CODEX_REF_VERSION, as in the installer — then the newer
 * ones. A newer reference is one more entry in that file.
 */
export function referenceVersions(): string[] {
  const [pinned, ...newer] = JSON.parse(readFileSync(path.join(repoRoot, 'scripts/tools/reference-versions.json'), 'utf8')) as string[];
  return [process.env.CODEX_REF_VERSION || pinned, ...newer];
}
export const pinnedReferenceVersion = (): string => referenceVersions()[0];
/** The installer's tool name of a reference version (tools.mjs): `reference` for the pinned one. */
const toolName = (version: string) => (version === pinnedReferenceVersion() ? 'reference' : `reference-${version}`);

const references = new Map<string, { bin: string; home: string }>();
/**
 * The reference `codex` binary of `version` and its CODEX_HOME, as installed by `npm test`'s
 * install stage (scripts/tools/install.mjs). Tests only look it up: installing from several test
 * files at once is what made them spawn a binary another file was still writing (ETXTBSY).
 */
function findReference(version = pinnedReferenceVersion()): { bin: string; home: string } {
  const known = references.get(version);
  if (known) return known;
  const tool = toolName(version);
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/tools/install.mjs'), '--find', tool], { encoding: 'utf8', timeout: 60_000 });
  const keys = Object.fromEntries(r.stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  const suffix = version.replace(/[^0-9A-Za-z]/g, '_');
  const bin = keys[`REFERENCE_${suffix}`];
  const home = keys[`CODEX_HOME_${suffix}`];
  if (r.status !== 0 || !bin || !home) {
    throw new Error(`the reference codex ${version} is not available (scripts/tools/install.mjs --find ${tool}, exit ${r.status ?? r.signal}): ${r.stderr.trim()}`);
  }
  mkdirSync(home, { recursive: true });
  const found = { bin, home };
  references.set(version, found);
  return found;
}
/** Path of the reference `codex` binary of `version` (default: the pinned one); fails clearly when the install stage has not installed it. */
export function referenceBinary(version?: string): string {
  return findReference(version).bin;
}
export function referenceEnv(version?: string): NodeJS.ProcessEnv {
  return { ...process.env, CODEX_HOME: findReference(version).home };
}

export interface ServerCommand {
  name: string;
  /** A reference server's version (undefined: ours). */
  version?: string;
  command: string;
  args: (listen: string) => string[];
  env: () => NodeJS.ProcessEnv;
}
export const ourServer: ServerCommand = {
  name: 'ours',
  command: process.execPath,
  args: (listen) => [cliPath, '--listen', listen],
  env: () => process.env,
};
/** The reference server of `version`: named `reference` for the pinned one, `reference-<version>` for a newer one. */
export function referenceServerOf(version: string): ServerCommand {
  return {
    name: toolName(version),
    version,
    command: '', // resolved lazily
    args: (listen) => ['exec-server', '--listen', listen],
    env: () => referenceEnv(version),
  };
}
/** The pinned reference server. */
export const referenceServer: ServerCommand = referenceServerOf(pinnedReferenceVersion());
/** Every reference version's server, pinned first: the cheap conformance scenarios run against each. */
export const referenceServers = (): ServerCommand[] => referenceVersions().map(referenceServerOf);
export const isReference = (s: ServerCommand): boolean => s.version !== undefined;
export function commandOf(s: ServerCommand): string {
  return s.version !== undefined ? referenceBinary(s.version) : s.command;
}

export type RunningServer = ServerProcess;

/** Starts a server listening on ws://127.0.0.1:0 and waits for the URL line on stdout (test/support/cli.ts). */
export function startWsServer(s: ServerCommand, extraArgs: string[] = [], timeoutMs = 30_000, t?: TestContext): Promise<RunningServer> {
  return startServerProcess(commandOf(s), [...s.args('ws://127.0.0.1:0'), ...extraArgs], { env: s.env(), timeoutMs, name: `${s.name} server`, t });
}

/** The reference binary of `version`, or undefined (the test says it skipped that half). */
export function referenceOrSkip(version: string, t: TestContext): string | undefined {
  try {
    return referenceBinary(version);
  } catch (e) {
    t.diagnostic(`reference ${version} absent, its half skipped: ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
}
