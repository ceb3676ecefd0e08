// Shared helpers for tests that run real server processes (our CLI, the reference binary).
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { TestContext } from 'node:test';
import { cliPath, repoRoot, startServerProcess, type ServerProcess } from '../support/cli';

export { cliPath, repoRoot } from '../support/cli';

let reference: { bin: string; home: string } | undefined;
/**
 * The reference `codex` binary and its CODEX_HOME, as installed by `npm test`'s install stage
 * (scripts/tools/install.mjs). Tests only look it up: installing from several test files at once
 * is what made them spawn a binary another file was still writing (ETXTBSY).
 */
function findReference(): { bin: string; home: string } {
  if (reference) return reference;
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/tools/install.mjs'), '--find', 'reference'], { encoding: 'utf8', timeout: 60_000 });
  const keys = Object.fromEntries(r.stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  if (r.status !== 0 || !keys.REFERENCE || !keys.CODEX_HOME) {
    throw new Error(`the reference codex is not available (scripts/tools/install.mjs --find reference, exit ${r.status ?? r.signal}): ${r.stderr.trim()}`);
  }
  mkdirSync(keys.CODEX_HOME, { recursive: true });
  reference = { bin: keys.REFERENCE, home: keys.CODEX_HOME };
  return reference;
}
/** Path of the reference `codex` binary (fails clearly when the install stage has not installed it). */
export function referenceBinary(): string {
  return findReference().bin;
}
export function referenceEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CODEX_HOME: findReference().home };
}

export interface ServerCommand {
  name: string;
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
export const referenceServer: ServerCommand = {
  name: 'reference',
  command: '', // resolved lazily
  args: (listen) => ['exec-server', '--listen', listen],
  env: referenceEnv,
};
export function commandOf(s: ServerCommand): string {
  return s.name === 'reference' ? referenceBinary() : s.command;
}

export type RunningServer = ServerProcess;

/** Starts a server listening on ws://127.0.0.1:0 and waits for the URL line on stdout (test/support/cli.ts). */
export function startWsServer(s: ServerCommand, extraArgs: string[] = [], timeoutMs = 30_000, t?: TestContext): Promise<RunningServer> {
  return startServerProcess(commandOf(s), [...s.args('ws://127.0.0.1:0'), ...extraArgs], { env: s.env(), timeoutMs, name: `${s.name} server`, t });
}
