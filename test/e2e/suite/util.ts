// Small helpers shared by the e2e tests: condition polling with a bound, file polling,
// the product extension's exported API, unique names in the scratch directory.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { config } from './config';

export const EXTENSION_ID = 'exec-server.exec-server';

/** A fixed pause: only where elapsed time is the subject, and each caller says why. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms)); // why: the one definition
}

/** `p`, or undefined once `ms` have passed first: the bound of one attempt, not a pause. */
export function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return Promise.race([p, new Promise<undefined>((r) => setTimeout(() => r(undefined), ms))]);
}

/** Polls `probe` until it returns a value other than undefined/false, or fails after timeoutMs. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 20_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(intervalMs); // why: the poll interval of this bounded wait
  }
}

/** Waits until `file` exists and its content satisfies `accept`; returns the content. */
export function waitForFile(file: string, accept: (text: string) => boolean = () => true, timeoutMs = 20_000): Promise<string> {
  return waitFor(`file ${file}`, () => {
    if (!existsSync(file)) return undefined;
    const text = readFileSync(file, 'utf8');
    return accept(text) ? text : undefined;
  }, timeoutMs);
}

let counter = 0;
/** A fresh directory inside the scratch dir, unique per call. */
export function freshDir(prefix: string): string {
  const dir = path.join(config().workDir, `${prefix}-${Date.now().toString(36)}-${++counter}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${++counter}`;
}

/** The shape of the product extension's exported API that the suite relies on. */
export interface ExecServerApi {
  version: string;
  getEnvironments(): readonly { name: string; state?: string; [k: string]: unknown }[];
  getClient(env: string): unknown;
  run(env: string, argv: string[], opts?: { cwd?: string; env?: Record<string, string> }): Promise<{
    exitCode: number;
    stdout: string;
    stderr: string;
  }>;
  openTerminal(env: string, opts?: { cwd?: string; argv?: string[]; name?: string }): vscode.Terminal | Promise<vscode.Terminal>;
}

export async function productApi(): Promise<ExecServerApi> {
  const ext = vscode.extensions.getExtension<ExecServerApi>(EXTENSION_ID);
  if (!ext) throw new Error(`extension ${EXTENSION_ID} is not installed`);
  const api = await ext.activate();
  if (!api || typeof api !== 'object') throw new Error(`extension ${EXTENSION_ID} exports no API`);
  return api;
}

export function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}

export function assertEqual<T>(actual: T, expected: T, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

/** Runs `fn` and fails unless it rejects; returns the error. */
export async function expectReject(what: string, fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
  throw new Error(`${what}: expected an error, but it succeeded`);
}
