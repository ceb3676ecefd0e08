// Terminals and processes in the UI: shell terminals over PTY processes, Run Command (a pipe
// process shown in a terminal), API runs, and read-only terminals for agent processes.
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ExecClient, ProcessHandle, StartProcessOptions } from '../client/api';
import type { EnvironmentInfo, EnvPolicy } from '../protocol/types';
import type { AgentProcess } from './core/agent-endpoint';
import { commandLine } from './core/approval';
import { LOCAL_ENVIRONMENT } from './core/environment-store';
import { ExecTerminal } from './core/exec-terminal';
import type { ProcessOrigin, ProcessRegistry } from './core/process-registry';
import type { RunResult } from './api';

export const SCHEME = 'exec-server';

/**
 * The child's environment: the server's own, minus what only makes sense inside the VS Code
 * extension host (ELECTRON_RUN_AS_NODE would turn a spawned `code` into plain Node).
 */
const ENV_POLICY: EnvPolicy = { inherit: 'all', ignoreDefaultExcludes: true, exclude: ['ELECTRON_RUN_AS_NODE', 'VSCODE_*'] };
const TERMINAL_ENV = { TERM: 'xterm-256color', COLORTERM: 'truecolor', TERM_PROGRAM: 'vscode' };
/** API run(): output kept in memory is bounded. */
const MAX_CAPTURE_BYTES = 64 * 1024 * 1024;

export interface TerminalServiceDeps {
  getClient(environment: string): Promise<ExecClient>;
  registry: ProcessRegistry;
  log: vscode.LogOutputChannel;
}

export interface TerminalOptions {
  cwd?: string;
  argv?: string[];
  name?: string;
  env?: Record<string, string>;
  origin?: ProcessOrigin;
  /** Called with the final argv and cwd before anything starts; rejecting cancels (approval gate). */
  approve?(argv: string[], cwd: string): Promise<void>;
}

/**
 * Paths of the workspace folders that live in an environment: file-scheme folders for Local,
 * exec-server://<environment>/ folders otherwise (the approval gate's roots, the default cwd).
 */
export function workspaceFolderPaths(environment: string): string[] {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (environment === LOCAL_ENVIRONMENT) return folders.filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  return folders.filter((f) => f.uri.scheme === SCHEME && f.uri.authority === environment).map((f) => f.uri.path);
}

/** environment/info at most once per terminal: the shell and the home directory come from one answer. */
type InfoSource = () => Promise<EnvironmentInfo | undefined>;
function infoOnce(client: ExecClient): InfoSource {
  let answer: Promise<EnvironmentInfo | undefined> | undefined;
  return () => (answer ??= client.environmentInfo().catch(() => undefined));
}

function clip(s: string, n = 60): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

export class TerminalService implements vscode.Disposable {
  constructor(private readonly deps: TerminalServiceDeps) {}

  /** The working directory used when none is given. */
  async defaultCwd(environment: string, client: ExecClient, info: InfoSource = infoOnce(client)): Promise<string> {
    const [folder] = workspaceFolderPaths(environment);
    if (folder !== undefined) return folder;
    const i = await info();
    if (!i) return environment === LOCAL_ENVIRONMENT ? os.homedir() : '/';
    return i.userHomeDir ?? i.cwd ?? '/';
  }

  async shellPath(client: ExecClient, info: InfoSource = infoOnce(client)): Promise<string> {
    return (await info())?.shell?.path || '/bin/sh';
  }

  /** A PTY terminal running argv (default: the environment's shell). */
  async newTerminal(environment: string, opts: TerminalOptions = {}): Promise<vscode.Terminal> {
    const client = await this.deps.getClient(environment);
    const info = infoOnce(client);
    const argv = opts.argv?.length ? opts.argv : [await this.shellPath(client, info)];
    const cwd = opts.cwd ?? (await this.defaultCwd(environment, client, info));
    await opts.approve?.(argv, cwd);
    const name = opts.name ?? `${path.basename(argv[0])} (${environment})`;
    const pty = this.ptyFor(environment, client, name, opts.origin ?? 'terminal', {
      argv,
      cwd,
      env: { ...TERMINAL_ENV, ...(opts.env ?? {}) },
      envPolicy: ENV_POLICY,
      tty: true,
    });
    const terminal = vscode.window.createTerminal({ name, pty, iconPath: new vscode.ThemeIcon('server-process') });
    terminal.show();
    return terminal;
  }

  /** The pseudoterminal of a shell, for the contributed terminal profile. */
  async profilePty(environment: string): Promise<{ name: string; pty: ExecTerminal }> {
    const client = await this.deps.getClient(environment);
    const info = infoOnce(client);
    const argv = [await this.shellPath(client, info)];
    const cwd = await this.defaultCwd(environment, client, info);
    const name = `${path.basename(argv[0])} (${environment})`;
    return { name, pty: this.ptyFor(environment, client, name, 'terminal', { argv, cwd, env: TERMINAL_ENV, envPolicy: ENV_POLICY, tty: true }) };
  }

  /** Run Command: a pipe process with its output in a terminal; resolves with the exit code. */
  async runCommand(
    environment: string,
    spec: { command?: string; argv?: string[]; cwd?: string; approve?(argv: string[], cwd: string): Promise<void> },
  ): Promise<{ exitCode: number }> {
    const client = await this.deps.getClient(environment);
    const info = infoOnce(client);
    let argv: string[];
    if (spec.argv?.length) argv = spec.argv;
    else if (spec.command?.trim()) argv = [await this.shellPath(client, info), '-c', spec.command];
    else throw new Error('runCommand needs "command" (a shell command line) or "argv"');
    const cwd = spec.cwd ?? (await this.defaultCwd(environment, client, info));
    await spec.approve?.(argv, cwd);
    const shown = spec.command ?? commandLine(argv);
    const name = `Run: ${clip(shown, 40)} (${environment})`;
    const pty = new ExecTerminal({
      mode: 'pipe',
      start: (_dims, flow) => this.start(environment, client, `${shown}`, 'command', { argv, cwd, env: {}, envPolicy: ENV_POLICY, tty: false, pipeStdin: true, ...flow }),
      log: (m) => this.deps.log.debug(`${name}: ${m}`),
    });
    const terminal = vscode.window.createTerminal({ name, pty, iconPath: new vscode.ThemeIcon('play') });
    terminal.show(true);
    const r = await pty.result;
    if (r.exitCode === undefined) throw new Error(`Exec Server: ${shown}: ${r.error ?? 'the process ended without an exit code'}`);
    this.deps.log.info(`${environment}: \`${shown}\` exited with ${r.exitCode}`);
    return { exitCode: r.exitCode };
  }

  /** API run(): no terminal; stdout and stderr collected (bounded). */
  async run(
    environment: string,
    argv: string[],
    opts: { cwd?: string; env?: Record<string, string>; approve?(argv: string[], cwd: string): Promise<void> } = {},
  ): Promise<RunResult> {
    // Checked before the approval question, which quotes argv.
    if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== 'string')) {
      throw new Error('run: argv must be a non-empty array of strings');
    }
    const client = await this.deps.getClient(environment);
    const cwd = opts.cwd ?? (await this.defaultCwd(environment, client));
    await opts.approve?.(argv, cwd);
    const h = await this.start(environment, client, commandLine(argv), 'api', { argv, cwd, env: opts.env ?? {}, envPolicy: ENV_POLICY, tty: false });
    const out: Uint8Array[] = [];
    const err: Uint8Array[] = [];
    let size = 0;
    let truncated = false;
    const sub = h.onOutput((e) => {
      if (size + e.data.length > MAX_CAPTURE_BYTES) {
        truncated = true;
        return;
      }
      size += e.data.length;
      (e.stream === 'stderr' ? err : out).push(e.data);
    });
    try {
      const exitCode = await h.exited;
      await h.closed;
      if (truncated) this.deps.log.warn(`run ${commandLine(argv)}: output above ${MAX_CAPTURE_BYTES} bytes was dropped`);
      const text = (parts: Uint8Array[]) => Buffer.concat(parts).toString('utf8');
      return { exitCode, stdout: text(out), stderr: text(err) };
    } finally {
      sub.dispose();
    }
  }

  /** Shows a process an agent started in a read-only terminal (closing it does not kill it). */
  showAgentProcess(p: AgentProcess): void {
    const name = `Agent: ${clip(commandLine(p.argv), 40)}`;
    this.deps.registry.add(LOCAL_ENVIRONMENT, commandLine(p.argv), 'agent', p);
    const pty = new ExecTerminal({
      mode: p.tty ? 'pty' : 'pipe',
      keepOpen: false,
      terminateOnClose: false,
      start: async () => p,
      log: (m) => this.deps.log.debug(`${name}: ${m}`),
    });
    vscode.window.createTerminal({ name, pty, iconPath: new vscode.ThemeIcon('hubot'), isTransient: true });
  }

  dispose(): void {
    // Terminals belong to VS Code; their processes end with the environments' connections.
  }

  private ptyFor(environment: string, client: ExecClient, label: string, origin: ProcessOrigin, opts: StartProcessOptions): ExecTerminal {
    return new ExecTerminal({
      mode: 'pty',
      start: (dims, flow) => this.start(environment, client, label, origin, { ...opts, rows: dims?.rows, cols: dims?.columns, ...flow }),
      log: (m) => this.deps.log.debug(`${label}: ${m}`),
    });
  }

  private async start(environment: string, client: ExecClient, label: string, origin: ProcessOrigin, opts: StartProcessOptions): Promise<ProcessHandle> {
    // The client of a dropped-and-replaced connection is closed: use the current one.
    const c = client.state === 'closed' || client.state === 'failed' ? await this.deps.getClient(environment) : client;
    const h = await c.startProcess(opts);
    this.deps.log.info(`${environment}: started ${label} (process ${h.processId}) in ${opts.cwd}`);
    this.deps.registry.add(environment, label, origin, h);
    return h;
  }
}
