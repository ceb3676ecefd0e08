// Terminals and processes in the UI: shell terminals over PTY processes, Run Command (a pipe
// process shown in a terminal), API runs, and read-only terminals for agent processes.
// Shells survive (docs/reliability.md): each follows its connection ("connection lost — reconnecting…",
// "reconnected"), a lost one is offered again, and the shells of remote (websocket) environments
// are recorded so that a reloaded window re-attaches them (restoreTerminals; src/extension/terminals/survival.ts).
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ExecClient, ProcessHandle, StartProcessOptions } from '../../../client/api';
import type { EnvironmentInfo, EnvPolicy } from '../../../protocol/types';
import { commandLine } from '../../approval';
import { LOCAL_ENVIRONMENT } from '../../environments';
import { ExecTerminal, type TerminalFlow } from '../exec-terminal';
import { TERMINAL_PACING } from '../output-coalescer';
import { followConnection, restorePlan, type TerminalRecord, type TerminalRecords } from '../survival';
import type { Disposable } from '../../../rpc/event';
import { SCHEME } from '../../common';
import type { ProcessOrigin, ProcessRegistry } from '../process-registry';


/**
 * The child's environment: the server's own, minus what only makes sense inside the VS Code
 * extension host (ELECTRON_RUN_AS_NODE would turn a spawned `code` into plain Node).
 */
const ENV_POLICY: EnvPolicy = { inherit: 'all', ignoreDefaultExcludes: true, exclude: ['ELECTRON_RUN_AS_NODE', 'VSCODE_*'] };
const TERMINAL_ENV = { TERM: 'xterm-256color', COLORTERM: 'truecolor', TERM_PROGRAM: 'vscode' };
/** API run(): output kept in memory is bounded. */
const MAX_CAPTURE_BYTES = 64 * 1024 * 1024;

/** What ExecServerApi.run answers (src/extension/ui/api.ts). */
export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface TerminalServiceDeps {
  getClient(environment: string): Promise<ExecClient>;
  registry: ProcessRegistry;
  log: vscode.LogOutputChannel;
  /** Shells to re-attach after a window reload (absent: nothing is recorded). */
  records?: TerminalRecords;
  /** Whether a shell of this environment can outlive the window (a websocket server keeps a detached session). */
  restorable?(environment: string): boolean;
  /** The environment's client resuming `sessionId` if it is still alive (a new session otherwise). */
  resumeClient?(environment: string, sessionId: string): Promise<ExecClient>;
}

/**
 * A user's close waits this long before terminating: a window reload also closes every terminal,
 * and the extension host's shutdown (detachAll) comes after that close.
 */
const TERMINATE_DELAY_MS = 1000;

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
  /** Shell terminals of this window (detached when the extension host goes away). */
  private readonly shells = new Set<ExecTerminal>();
  /** The workbench terminal of each shell this service created (to tell a shutdown close from a user's). */
  private readonly ptyOf = new WeakMap<vscode.Terminal, ExecTerminal>();
  private readonly closeSub: vscode.Disposable;
  private shuttingDown = false;
  constructor(private readonly deps: TerminalServiceDeps) {
    // A window reload closes every terminal with reason Shutdown: keep those processes (the
    // delayed terminate of a user's close is cancelled), even if deactivate comes late.
    this.closeSub = vscode.window.onDidCloseTerminal((t) => {
      if (t.exitStatus?.reason === vscode.TerminalExitReason.Shutdown) this.ptyOf.get(t)?.detach();
    });
  }

  /**
   * The window is going away (deactivate, before the connections close): keep every shell's
   * process running and its record, so the reloaded window can re-attach it.
   */
  detachAll(): void {
    this.shuttingDown = true;
    for (const t of this.shells) t.detach();
  }

  /**
   * After a window reload: terminals for the recorded shells of remote environments, each
   * re-attached to its process with the output the server retained; a shell whose session or
   * process ended meanwhile says so and offers to start it again. Returns the terminals.
   */
  async restoreTerminals(): Promise<vscode.Terminal[]> {
    const records = this.deps.records;
    if (!records || !this.deps.resumeClient) return [];
    const all = records.list();
    const plan = restorePlan(all, (env) => this.deps.restorable?.(env) ?? false);
    const planned = new Set(plan.flatMap((p) => [...p.records, ...p.gone]).map((r) => r.processId));
    for (const r of all) if (!planned.has(r.processId)) void records.remove(r.processId);
    const terminals: vscode.Terminal[] = [];
    await Promise.all(
      plan.map(async ({ environment, sessionId, records: live, gone }) => {
        const client = this.deps.resumeClient!(environment, sessionId).then(
          (c) => c,
          (e: unknown) => {
            this.deps.log.warn(`${environment}: cannot re-attach terminals: ${e instanceof Error ? e.message : String(e)}`);
            return undefined;
          },
        );
        for (const r of [...live, ...gone]) terminals.push(this.restoreOne(r, client));
      }),
    );
    if (terminals.length) this.deps.log.info(`re-attaching ${terminals.length} terminal(s) after the window reload`);
    return terminals;
  }

  private restoreOne(r: TerminalRecord, client: Promise<ExecClient | undefined>): vscode.Terminal {
    const opts: StartProcessOptions = { argv: r.argv, cwd: r.cwd, env: TERMINAL_ENV, envPolicy: ENV_POLICY, tty: true };
    const adopt = async (_dims: unknown, flow: TerminalFlow): Promise<{ handle: ProcessHandle; client: ExecClient }> => {
      const c = await client;
      try {
        if (!c) throw new Error(`cannot reach ${r.environment}`);
        if (c.sessionId !== r.sessionId) throw new Error('its session ended while the window reloaded');
        if (!c.adoptProcess) throw new Error('this client cannot re-attach processes');
        const handle = await c.adoptProcess(r.processId, flow);
        this.deps.log.info(`${r.environment}: re-attached ${r.name} (process ${r.processId})`);
        this.deps.registry.add(r.environment, r.name, 'terminal', handle);
        return { handle, client: c };
      } catch (e) {
        void this.deps.records?.remove(r.processId);
        throw new Error(`${r.name} could not be re-attached: ${e instanceof Error ? e.message : String(e)}`);
      }
    };
    const pty = this.shellPty(r.environment, () => this.deps.getClient(r.environment), r.name, 'terminal', opts, adopt);
    const terminal = vscode.window.createTerminal({ name: r.name, pty, iconPath: new vscode.ThemeIcon('server-process') });
    this.ptyOf.set(terminal, pty);
    return terminal;
  }

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
    const pty = this.shellPty(environment, async () => client, name, opts.origin ?? 'terminal', {
      argv,
      cwd,
      env: { ...TERMINAL_ENV, ...(opts.env ?? {}) },
      envPolicy: ENV_POLICY,
      tty: true,
    });
    const terminal = vscode.window.createTerminal({ name, pty, iconPath: new vscode.ThemeIcon('server-process') });
    this.ptyOf.set(terminal, pty);
    terminal.show();
    return terminal;
  }

  /**
   * The pseudoterminal of a shell, for the contributed terminal profile. VS Code creates its
   * terminal, and shows it once it opens (see showWhenOpened).
   */
  async profilePty(environment: string): Promise<{ name: string; pty: ExecTerminal }> {
    const client = await this.deps.getClient(environment);
    const info = infoOnce(client);
    const argv = [await this.shellPath(client, info)];
    const cwd = await this.defaultCwd(environment, client, info);
    const name = `${path.basename(argv[0])} (${environment})`;
    const pty = this.shellPty(environment, async () => client, name, 'terminal', { argv, cwd, env: TERMINAL_ENV, envPolicy: ENV_POLICY, tty: true });
    this.showWhenOpened(pty);
    return { name, pty };
  }

  /**
   * A profile's terminal is created by the workbench after provideTerminalProfile returns, but
   * the workbench then activates the LAST terminal it already knows (TerminalService
   * createContributedTerminalProfile: setActiveInstanceByIndex(length - 1)) before the extension
   * host's $createTerminal for ours has finished: another terminal was shown and focused, ours
   * stayed in the background. Show and focus ours when it opens;
   * it is also tracked like our other shells (a window reload detaches it).
   */
  private showWhenOpened(pty: ExecTerminal): void {
    const done = () => {
      clearTimeout(timer);
      sub.dispose();
    };
    const sub = vscode.window.onDidOpenTerminal((t) => {
      if ((t.creationOptions as vscode.ExtensionTerminalOptions).pty !== pty) return;
      done();
      this.ptyOf.set(t, pty);
      t.show(false);
    });
    // The workbench may drop the profile (its own error): stop listening after a while.
    const timer = setTimeout(done, 120_000);
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
      coalescer: TERMINAL_PACING,
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
  showAgentProcess(p: ProcessHandle & { readonly argv: string[]; readonly cwd: string; readonly tty: boolean }): void {
    const name = `Agent: ${clip(commandLine(p.argv), 40)}`;
    this.deps.registry.add(LOCAL_ENVIRONMENT, commandLine(p.argv), 'agent', p);
    const pty = new ExecTerminal({
      coalescer: TERMINAL_PACING,
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
    this.closeSub.dispose();
  }

  /**
   * A shell's pseudoterminal: it follows its connection, offers the same command again when
   * the process is lost, and (remote environments) is recorded for re-attaching after a reload.
   * `adopt`: the first process is an existing one (restoreTerminals) instead of a new start.
   */
  private shellPty(
    environment: string,
    client: () => Promise<ExecClient>,
    label: string,
    origin: ProcessOrigin,
    opts: StartProcessOptions,
    adopt?: (dims: unknown, flow: TerminalFlow) => Promise<{ handle: ProcessHandle; client: ExecClient }>,
  ): ExecTerminal {
    let watching: Disposable | undefined;
    let processId: string | undefined;
    const recordable = !!this.deps.records && (this.deps.restorable?.(environment) ?? false);
    const follow = (handle: ProcessHandle, c: ExecClient) => {
      watching?.dispose();
      watching = followConnection(c, pty);
      processId = handle.processId;
      if (!recordable) return handle;
      void this.deps.records!.put({ environment, sessionId: c.sessionId, processId: handle.processId, name: label, argv: opts.argv, cwd: opts.cwd });
      // Over (exit, or lost while this window lives): nothing to re-attach. A shutdown keeps it.
      void handle.closed.then(() => {
        if (!this.shuttingDown) void this.deps.records!.remove(handle.processId);
      });
      return handle;
    };
    const startNew = async (dims: { rows: number; columns: number } | undefined, flow: TerminalFlow) => {
      const { handle, client: c } = await this.startWith(environment, await client(), label, origin, { ...opts, rows: dims?.rows, cols: dims?.columns, ...flow });
      return follow(handle, c);
    };
    const pty: ExecTerminal = new ExecTerminal({
      coalescer: TERMINAL_PACING,
      mode: 'pty',
      start: adopt ? async (dims, flow) => {
        const { handle, client: c } = await adopt(dims, flow);
        return follow(handle, c);
      } : startNew,
      restart: startNew,
      terminateDelayMs: TERMINATE_DELAY_MS,
      onUserClose: () => {
        watching?.dispose();
        this.shells.delete(pty);
        if (processId && recordable) void this.deps.records!.remove(processId);
      },
      log: (m) => this.deps.log.debug(`${label}: ${m}`),
    });
    this.shells.add(pty);
    pty.onDidClose(() => this.shells.delete(pty));
    return pty;
  }

  private async start(environment: string, client: ExecClient, label: string, origin: ProcessOrigin, opts: StartProcessOptions): Promise<ProcessHandle> {
    return (await this.startWith(environment, client, label, origin, opts)).handle;
  }

  private async startWith(environment: string, client: ExecClient, label: string, origin: ProcessOrigin, opts: StartProcessOptions): Promise<{ handle: ProcessHandle; client: ExecClient }> {
    // The client of a dropped-and-replaced connection is closed: use the current one.
    const c = client.state === 'closed' || client.state === 'failed' ? await this.deps.getClient(environment) : client;
    const h = await c.startProcess(opts);
    this.deps.log.info(`${environment}: started ${label} (process ${h.processId}) in ${opts.cwd}`);
    this.deps.registry.add(environment, label, origin, h);
    return { handle: h, client: c };
  }
}
