// Connect to Host…: a quick pick of the hosts in ~/.ssh/config (or execServer.ssh.configFile)
// plus whatever `user@host[:port]` the user types; then, with progress, over the system ssh:
// probe the host (src/extension/ssh/probe.ts), trust an unknown host key only after asking, find an
// executor — or offer to install this extension's CLI there (src/extension/ssh/install.ts) —, save
// the host as a command environment (it shows in the view and reconnects like any other)
// and connect. Errors name the cause once (auth, unknown host, no route, no Node, …).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { CommandId } from '../../common/ui';
import { offerNextSteps, oneAnswer, str, type Args, type CommandHandler } from '../../common/ui';
import type { EnvironmentManager } from '../../environments';
import type { EnvironmentStore } from '../../environments';
import { markReported, noIcons, noLinks } from '../../common';
import type { AskpassProvider } from '../askpass';
import { readSshConfigHosts, type SshConfigHost } from '../config';
import { chooseEnvironmentName, sshEnvironmentInput } from '../environment';
import { findBundle, installOnHost, InstallError, isOutdated, planInstall, type CliBundle, type InstallPlan } from '../install';
import { chooseExecutor, probeHost, type Executor, type HostFacts } from '../probe';
import { formatSshTarget, parseSshTarget, SshError, type SshOptions, type SshTarget } from '../target';
import { LOCAL_ENVIRONMENT } from '../../environments';
import { CurrentEnvironmentIndicator } from './status';
import { probeTrustingNewHostKey } from './trust';

const TITLE = 'Exec Server: Connect to Host';

export interface SshCommandDeps {
  ctx: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
  store: EnvironmentStore;
  manager: EnvironmentManager;
  /** registerCommand of ./command-registry.ts (ctx, log bound). */
  register<K extends CommandId>(id: K, handler: CommandHandler<K>): void;
  refresh(): void;
  /** The approval gate for command lines given programmatically (like the API's run). */
  approve(environment: string, argv: string[], cwd: string): Promise<void>;
  /** execServer.ssh.path / execServer.ssh.configFile (user settings). */
  sshOptions(): SshOptions;
  /** ssh's login questions as input boxes (undefined: the helper could not start; BatchMode stays on). */
  askpass(): Promise<AskpassProvider | undefined>;
}

type HostItem = vscode.QuickPickItem & { target?: SshTarget; openConfig?: true };

/** A config host's row: `$(…)` in its alias or HostName (an Include'd file's words) is text, not an icon. */
function hostItem(h: SshConfigHost): HostItem {
  const where = `${h.user ? `${h.user}@` : ''}${h.hostName ?? ''}${h.port ? `:${h.port}` : ''}`;
  return { label: noIcons(h.alias), description: where ? noIcons(where) : undefined, target: { host: h.alias } };
}

/** The host quick pick; resolves with the target, or undefined (Escape). */
async function pickHost(d: SshCommandDeps, ssh: SshOptions): Promise<SshTarget | undefined> {
  const { hosts, problems } = readSshConfigHosts(ssh.configFile || undefined);
  for (const p of problems) d.log.warn(`ssh config: ${p}`);
  const configured = hosts.map(hostItem);
  const openConfig: HostItem = { label: '$(gear) Open SSH Configuration File…', openConfig: true, alwaysShow: true };
  const qp = vscode.window.createQuickPick<HostItem>();
  qp.title = TITLE;
  qp.placeholder = hosts.length ? 'Select a host from your ssh config, or type user@host[:port]' : 'Type user@host[:port] (no hosts in your ssh config)';
  qp.matchOnDescription = true;
  qp.ignoreFocusOut = true;
  const sep: HostItem = { label: 'ssh config', kind: vscode.QuickPickItemKind.Separator };
  const update = () => {
    const v = qp.value.trim();
    const typed: HostItem[] = [];
    if (v && !hosts.some((h) => h.alias === v)) {
      try {
        const t = parseSshTarget(v);
        typed.push({ label: `$(arrow-right) ${formatSshTarget(t)}`, description: 'connect to this host', target: t, alwaysShow: true });
      } catch (e) {
        typed.push({ label: `$(error) ${noIcons(v)}`, description: noIcons((e as Error).message), alwaysShow: true });
      }
    }
    qp.items = [...typed, ...(configured.length ? [sep, ...configured] : []), openConfig];
    // Enter right after typing takes what was typed (VS Code may keep an older active row).
    const exact = configured.find((i) => i.target?.host === v);
    if (exact) qp.activeItems = [exact];
    else if (typed[0]?.target) qp.activeItems = [typed[0]];
  };
  update();
  return new Promise((resolve) => {
    const answer = oneAnswer<SshTarget | undefined>(qp, resolve);
    const finish = answer.finish;
    qp.onDidChangeValue(update);
    qp.onDidAccept(() => {
      const v = qp.value.trim();
      // An alias typed in full wins over whatever row is active.
      const item = configured.find((i) => i.target?.host === v) ?? qp.activeItems[0];
      if (item?.openConfig) {
        openSshConfig(d, ssh);
        finish(undefined);
      } else if (item?.target) finish(item.target);
    });
    qp.onDidHide(() => finish(undefined));
    qp.show();
  });
}

/** What happened, for programmatic callers (and the e2e tests). */
export interface ConnectToHostResult {
  environment: string;
  executor: Executor['kind'];
  installed: boolean;
}

function hostSummary(f: HostFacts): string {
  return [`${f.os} ${f.arch}`, f.node ? `Node ${f.nodeVersion ?? '?'}` : 'no Node'].join(', ');
}

/** Connect to Host… and the current-environment indicator (./ssh-status.ts). */
type Progress = vscode.Progress<{ message?: string }>;

/** A progress notification running f; Cancel aborts its signal. */
function withProgress<T>(title: string, f: (p: Progress, signal: AbortSignal) => Promise<T>, cancellable = true): Thenable<T> {
  // A progress notification renders links: the title names the host as the config spells it.
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: noLinks(title), cancellable }, (p, token) => {
    const ac = new AbortController();
    token.onCancellationRequested(() => ac.abort());
    return f(p, ac.signal);
  });
}

/** Returns the current-environment indicator: Connect to Container tells it what it reached too. */
export function registerSshCommands(d: SshCommandDeps): { connected(environment: string): void } {
  const indicator = new CurrentEnvironmentIndicator(d.store, d.manager);
  d.ctx.subscriptions.push(indicator);
  // Args (programmatic): {host: alias | user@host[:port], name?, install?: true (install without
  // asking when no executor is found), trustNewHostKey?: true}. Without args: the quick pick.
  d.register('execServer.connectToHost', (args) => connectToHost(d, indicator, args));
  return indicator;
}

/** One host's facts and the executor to use there (none: nothing runs yet). */
interface HostState {
  facts: HostFacts;
  executor: Executor | undefined;
  installed: boolean;
}

async function connectToHost(d: SshCommandDeps, indicator: CurrentEnvironmentIndicator, args: Args, retry?: SshTarget): Promise<ConnectToHostResult | undefined> {
  const ssh: SshOptions = { ...d.sshOptions(), askpass: await d.askpass() };
  const given = retry ? undefined : str(args, 'host');
  const programmatic = !!args && !!given;
  const target = retry ?? (given ? parseSshTarget(given) : await pickHost(d, ssh));
  if (!target) return undefined;
  const shown = formatSshTarget(target);
  // ssh runs on this machine with the caller's target: a call from another extension asks first.
  if (programmatic) await d.approve(LOCAL_ENVIRONMENT, [ssh.sshPath || 'ssh', shown], os.homedir());
  d.log.info(`Connect to Host: ${shown} (ssh ${ssh.sshPath || 'ssh'}${ssh.configFile ? `, config ${ssh.configFile}` : ''})`);
  try {
    const facts = await withProgress(`Exec Server: connecting to ${shown}`, (progress, signal) =>
      probeTrustingNewHostKey(target, ssh, { log: d.log, progress, signal, ask: !programmatic, trust: !programmatic || args?.trustNewHostKey === true }),
    );
    d.log.info(`Connect to Host: ${shown}: ${hostSummary(facts)}; exec-server ${facts.execServer ?? '-'}, installed ${facts.installed ?? '-'}, codex ${facts.codexExecServer ? facts.codex : '-'}`);
    const host = await ensureExecutor(d, target, ssh, { facts, executor: chooseExecutor(facts), installed: false }, args, programmatic);
    if (!host) return undefined;
    const chosen = host.executor;
    if (!chosen) throw new Error(`the CLI was installed on ${shown} but the host does not find it (~/.exec-server/bin/exec-server)`);
    const input = sshEnvironmentInput('', target, ssh, chosen);
    const { name, existing } = chooseEnvironmentName(target, input, d.store.list(), str(args, 'name'));
    if (!existing) {
      await d.store.add({ ...input, name });
      await d.manager.disconnect(name); // a replaced definition: the next connect takes the new one
      d.refresh();
      d.log.info(`environment ${name} saved: ${input.command} ${input.args!.join(' ')}`);
    }
    // The manager's connect attempt is shared with other callers: not cancellable from here.
    await withProgress(`Exec Server: starting ${chosen.description} on ${shown}`, () => d.manager.getClient(name), false);
    indicator.connected(name);
    d.refresh();
    if (!programmatic) offerNextSteps(`Exec Server: connected to ${name} (${chosen.description}).`, name);
    return { environment: name, executor: chosen.kind, installed: host.installed } satisfies ConnectToHostResult;
  } catch (e) {
    if (e instanceof vscode.CancellationError || (e instanceof Error && e.message === 'cancelled')) {
      d.log.info(`Connect to Host: ${shown}: cancelled`);
      return undefined;
    }
    const why = e instanceof SshError || e instanceof InstallError ? e.message : `cannot connect to ${shown}: ${e instanceof Error ? e.message : String(e)}`;
    // Reported in a notification; the reason may quote the host (its banner, the probe's output).
    const failure = new Error(`Exec Server: ${noLinks(why)}`);
    if (e instanceof SshError) d.log.error(`Connect to Host: ${shown}: ssh said:\n${e.stderr.trim() || '(nothing)'}`);
    if (!programmatic) {
      markReported(failure);
      offerActions(d, indicator, failure.message, target, ssh);
    }
    throw failure;
  }
}

/** The error with what the user does next: try again, fix the ssh config, read all ssh said. */
function offerActions(d: SshCommandDeps, indicator: CurrentEnvironmentIndicator, message: string, target: SshTarget, ssh: SshOptions): void {
  void vscode.window.showErrorMessage(message, 'Retry', 'Open SSH Config', 'Show Log').then((c) => {
    if (c === 'Retry') void connectToHost(d, indicator, undefined, target).catch(() => undefined);
    else if (c === 'Open SSH Config') openSshConfig(d, ssh);
    else if (c === 'Show Log') d.log.show();
  });
}

/** The config file Connect to Host lists and ssh reads (-F), created empty (0600) when there is none. */
function openSshConfig(d: SshCommandDeps, ssh: SshOptions): void {
  const file = ssh.configFile || path.join(os.homedir(), '.ssh', 'config');
  try {
    // No config yet: start an empty one with ssh's permissions (ssh refuses a config others can write).
    if (!existsSync(file)) {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      writeFileSync(file, '', { mode: 0o600, flag: 'wx' });
    }
  } catch (e) {
    d.log.warn(`cannot create ${file}: ${(e as Error).message}`);
  }
  void vscode.window.showTextDocument(vscode.Uri.file(file)).then(undefined, (e: Error) => void vscode.window.showErrorMessage(`Exec Server: cannot open ${file}: ${e.message}`));
}

/**
 * No executor on the host: install this extension's CLI (asked first unless args.install); the
 * CLI installed earlier by an older version: offer the update. Undefined when the user declined.
 */
async function ensureExecutor(d: SshCommandDeps, target: SshTarget, ssh: SshOptions, host: HostState, args: Args, programmatic: boolean): Promise<HostState | undefined> {
  const shown = formatSshTarget(target);
  const version = String((d.ctx.extension.packageJSON as { version?: string }).version ?? '0.0.0');
  const bundle = () => findBundle(d.ctx.extensionPath, version);
  const install = async (plan: InstallPlan, b: CliBundle): Promise<HostState> => {
    const facts = await withProgress(`Exec Server: installing on ${shown}`, async (p, signal) => {
      p.report({ message: plan.summary });
      await installOnHost(target, ssh, b, plan, {
        signal,
        onProgress: (line) => {
          d.log.info(`[install ${shown}] ${line}`);
          // The installer's output on the host (npm, node-gyp): shown in the notification, no links.
          if (!/^\s*(gyp|npm) (info|timing|verb)/.test(line)) p.report({ message: noLinks(line.slice(0, 120)) });
        },
      });
      return probeHost(target, ssh, { signal });
    });
    return { facts, executor: chooseExecutor(facts), installed: true };
  };
  const { facts, executor } = host;
  if (!executor) {
    const b = bundle();
    const plan = planInstall(facts, b); // throws the reason it cannot work
    if (args?.install !== true) {
      if (programmatic) throw new Error(`no exec-server on ${shown} (pass install: true to install the CLI there)`);
      const ok = await vscode.window.showInformationMessage(
        `Exec Server: no exec-server found on ${shown} (${hostSummary(facts)}).`,
        { modal: true, detail: `Install this extension's CLI there? It goes into ~/.exec-server on the host (${plan.summary}); nothing else is changed.` },
        'Install',
      );
      if (ok !== 'Install') return undefined;
    }
    return install(plan, b);
  }
  if (executor.kind === 'installed' && isOutdated(facts.installedVersion, version) && (!programmatic || args?.install === true)) {
    // The CLI this extension installed earlier, from an older version: offer the update.
    let plan: InstallPlan | undefined;
    let b: CliBundle | undefined;
    try {
      b = bundle();
      plan = planInstall(facts, b);
    } catch (e) {
      d.log.warn(`Connect to Host: ${shown}: the installed CLI (${facts.installedVersion}) cannot be updated: ${(e as Error).message}`);
    }
    const ok =
      plan && b && (args?.install === true ||
        (await vscode.window.showInformationMessage(
          `Exec Server: ${shown} has ${facts.installedVersion || 'an unknown version'} of the CLI; this extension carries ${version}.`,
          { modal: true, detail: `Update the CLI in ~/.exec-server on the host (${plan.summary})? "Use Installed" connects with the one there.` },
          'Update',
          'Use Installed',
        )) === 'Update');
    if (ok) return install(plan!, b!);
  }
  return host;
}
