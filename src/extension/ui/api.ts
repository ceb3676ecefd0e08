// The API the extension exports from activate(): other extensions (and the e2e suite) get it
// with `vscode.extensions.getExtension('exec-server.exec-server').activate()`.
import type * as vscode from 'vscode';
import type { ExecClient } from '../../client/api';
import type { EnvironmentKind } from '../environments';
import type { EnvironmentState } from '../environments';
import type { RunResult } from '../terminals/ui';

export type { RunResult };

export interface EnvironmentSummary {
  name: string;
  kind: EnvironmentKind;
  state: EnvironmentState;
}

export interface ExecServerApi {
  /** The extension's version (package.json). */
  readonly version: string;
  getEnvironments(): EnvironmentSummary[];
  /** Connects on first use. Direct client access is not gated: callers are trusted extensions. */
  getClient(environment: string): Promise<ExecClient>;
  /** Runs argv to completion (no PTY). Goes through the approval gate; a denial rejects. */
  run(environment: string, argv: string[], opts?: { cwd?: string; env?: Record<string, string> }): Promise<RunResult>;
  /** Opens a terminal running argv (default: the environment's shell). Goes through the approval gate. */
  openTerminal(environment: string, opts?: { cwd?: string; argv?: string[]; name?: string }): Promise<vscode.Terminal>;
}
