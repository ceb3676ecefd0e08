// Connect to Container…: a quick pick of the running containers of podman and docker (whichever
// CLIs the settings name and exist) and of the pods kubectl sees; then, with progress: probe the
// container, find an executor — or offer to install this extension's CLI there (podman/docker/
// kubectl cp) —, save it as a command environment (`<cli> exec -i … -- <executor> --listen
// stdio://`) and connect. A container environment whose connection is lost is looked at: a
// stopped container is announced, and reconnected when it runs again.
import * as os from 'node:os';
import * as vscode from 'vscode';
import type { CommandId } from '../../common/ui';
import { offerNextSteps, oneAnswer, str, type CommandHandler } from '../../common/ui';
import type { EnvironmentManager } from '../../environments';
import { LOCAL_ENVIRONMENT, type EnvironmentStore } from '../../environments';
import { noIcons, noLinks } from '../../common';
import { isOutdated } from '../../ssh';
import { engineCandidates, runCli, type ContainerSettings } from '../cli';
import { containerState, waitUntilRunning } from '../connect';
import { parseContainerList, parsePodList } from '../list';
import { chooseContainerExecutor, factsSummary, findBundle, installInContainer, planContainerInstall, probeContainer, type ContainerExecutor } from '../setup';
import { checkTarget, chooseContainerEnvironmentName, describeTarget, environmentNameFor, execArgv, listArgv, targetOfCommand, type ContainerTarget } from '../target';

const TITLE = 'Exec Server: Connect to Container';

export interface ContainerCommandDeps {
  ctx: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
  store: EnvironmentStore;
  manager: EnvironmentManager;
  register<K extends CommandId>(id: K, handler: CommandHandler<K>): void;
  refresh(): void;
  /** The approval gate for command lines given programmatically. */
  approve(environment: string, argv: string[], cwd: string): Promise<void>;
  /** execServer.containers.* / execServer.kubernetes.* (user settings). */
  settings(): ContainerSettings;
  /** The current-environment indicator: the window now works in `environment`. */
  connected(environment: string): void;
}

type Item = vscode.QuickPickItem & { target?: ContainerTarget };

/** One listing per CLI: its rows, or one row saying why it could not list. */
async function listAll(s: ContainerSettings, log: vscode.LogOutputChannel): Promise<Item[]> {
  const sources: { cli: 'podman' | 'docker' | 'kubectl'; program: string; context: string; explicit: boolean }[] = [];
  let engines: ReturnType<typeof engineCandidates> = [];
  try {
    engines = engineCandidates(s.cli);
  } catch (e) {
    return [{ label: `$(error) ${noIcons((e as Error).message)}`, alwaysShow: true }];
  }
  for (const c of engines) sources.push({ ...c, context: s.context, explicit: s.cli !== 'auto' });
  sources.push({ cli: 'kubectl', program: s.kubectl || 'kubectl', context: s.kubeContext, explicit: !!s.kubectl });
  const lists = await Promise.all(
    sources.map(async (src): Promise<Item[]> => {
      const sep: Item = { label: src.cli === 'kubectl' ? 'Kubernetes pods (kubectl)' : src.cli, kind: vscode.QuickPickItemKind.Separator };
      const problem = (m: string): Item[] => [sep, { label: `$(warning) ${src.cli}`, description: noIcons(m), alwaysShow: true }];
      try {
        const r = await runCli(src.program, listArgv(src.cli, src.context || undefined), { timeoutMs: 20_000 });
        if (r.code !== 0) return problem(`${src.program} could not list: ${r.stderr.trim().split('\n').slice(-1)[0]?.slice(0, 200) ?? `exit ${r.code}`}`);
        if (src.cli === 'kubectl') {
          const { items, problems } = parsePodList(r.stdout);
          for (const p of problems) log.warn(`Connect to Container: ${p}`);
          return items.length
            ? [sep, ...items.map((p) => ({
                label: noIcons(`${p.namespace}/${p.pod}`),
                description: noIcons(`${p.container} · ${p.image}${p.running ? '' : ` · ${p.phase} (not running)`}`),
                target: { cli: 'kubectl' as const, program: src.program, ...(src.context ? { context: src.context } : {}), namespace: p.namespace, pod: p.pod, container: p.container },
              }))]
            : [];
        }
        const { items, problems } = parseContainerList(src.cli, r.stdout);
        for (const p of problems) log.warn(`Connect to Container: ${p}`);
        const running = items.filter((c) => c.state === 'running');
        if (!running.length) return [sep, { label: `$(info) no running ${src.cli} containers`, alwaysShow: true }];
        return [sep, ...running.map((c) => ({
          label: noIcons(c.name),
          description: noIcons([c.image || '(no image)', c.status].filter(Boolean).join(' · ')),
          target: { cli: src.cli as 'podman' | 'docker', program: src.program, ...(src.context ? { context: src.context } : {}), container: c.name },
        }))];
      } catch (e) {
        // A CLI that is not installed is not worth a row unless the settings name it.
        if (/not installed/.test((e as Error).message) && !src.explicit) return [];
        return problem((e as Error).message);
      }
    }),
  );
  const all = lists.flat();
  return all.some((i) => i.target) || all.length ? all : [{ label: '$(info) No podman, docker or kubectl found (execServer.containers.cli)', alwaysShow: true }];
}

async function pickContainer(d: ContainerCommandDeps): Promise<ContainerTarget | undefined> {
  const qp = vscode.window.createQuickPick<Item>();
  qp.title = TITLE;
  qp.placeholder = 'Select a running container';
  qp.matchOnDescription = true;
  qp.ignoreFocusOut = true;
  qp.busy = true;
  qp.show();
  return new Promise((resolve) => {
    const answer = oneAnswer<ContainerTarget | undefined>(qp, resolve);
    const finish = answer.finish;
    qp.onDidAccept(() => {
      const t = qp.activeItems[0]?.target;
      if (t) finish(t);
    });
    qp.onDidHide(() => finish(undefined));
    void listAll(d.settings(), d.log).then((items) => {
      if (answer.done) return;
      qp.items = items;
      qp.busy = false;
    });
  });
}

/** The target named by programmatic args, with the CLI the settings choose. */
function targetFromArgs(args: Record<string, unknown> | undefined, s: ContainerSettings): ContainerTarget | undefined {
  const cli = str(args, 'cli');
  if (!cli) return undefined;
  if (cli === 'kubectl') {
    return checkTarget({ cli, program: s.kubectl || 'kubectl', ...(s.kubeContext ? { context: s.kubeContext } : {}), namespace: str(args, 'namespace') ?? 'default', pod: str(args, 'pod') ?? '', ...(str(args, 'container') ? { container: str(args, 'container') } : {}) });
  }
  if (cli !== 'podman' && cli !== 'docker') throw new Error(`Exec Server: "cli" must be podman, docker or kubectl (got ${JSON.stringify(cli)})`);
  const engine = engineCandidates(s.cli).find((c) => c.cli === cli) ?? { cli, program: cli };
  return checkTarget({ cli, program: engine.program, ...(s.context ? { context: s.context } : {}), container: str(args, 'container') ?? '' });
}

export function registerContainerCommands(d: ContainerCommandDeps): void {
  d.register('execServer.connectToContainer', (args) => connectToContainer(d, args));
  watchContainerRestarts(d);
}

type RunWithProgress = <T>(title: string, f: (p: vscode.Progress<{ message?: string }>, signal: AbortSignal) => Promise<T>, cancellable?: boolean) => Thenable<T>;

/** A progress notification whose Cancel aborts `f`'s signal. */
const runWithProgress: RunWithProgress = (title, f, cancellable = true) =>
  vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: noLinks(title), cancellable }, (p, token) => {
    const ac = new AbortController();
    token.onCancellationRequested(() => ac.abort());
    return f(p, ac.signal);
  });

/** Connect to Container: pick (or take) the container, find or install an executor in it, save the environment, connect. */
async function connectToContainer(d: ContainerCommandDeps, args: Record<string, unknown> | undefined) {
  const given = targetFromArgs(args, d.settings());
  const programmatic = !!given;
  const target = given ?? (await pickContainer(d));
  if (!target) return undefined;
  const where = describeTarget(target);
  // The CLI runs on this machine with the caller's names: a call from another extension asks first.
  if (programmatic) await d.approve(LOCAL_ENVIRONMENT, [target.program, ...execArgv(target, ['sh'])], os.homedir());
  d.log.info(`Connect to Container: ${where} (${target.program}${target.context ? `, context ${target.context}` : ''})`);
  try {
    const found = await executorIn(d, target, args, programmatic);
    if (!found) return undefined;
    const { executor, installed } = found;
    const input = { command: target.program, args: execArgv(target, executor.argv) };
    const { name, existing } = chooseContainerEnvironmentName(str(args, 'name') ?? environmentNameFor(target), input, d.store.list());
    if (!existing) {
      await d.store.add({ ...input, name });
      await d.manager.disconnect(name);
      d.refresh();
      d.log.info(`environment ${name} saved: ${input.command} ${input.args.join(' ')}`);
    }
    await runWithProgress(`Exec Server: starting ${executor.description} in ${where}`, () => d.manager.getClient(name), false);
    d.connected(name);
    d.refresh();
    if (!programmatic) offerNextSteps(`Exec Server: connected to ${name} (${executor.description}).`, name);
    return { environment: name, executor: executor.kind, installed };
  } catch (e) {
    if (e instanceof vscode.CancellationError || (e instanceof Error && e.message === 'cancelled')) {
      d.log.info(`Connect to Container: ${where}: cancelled`);
      return undefined;
    }
    const msg = e instanceof Error ? e.message : String(e);
    throw new Error(`Exec Server: ${noLinks(msg.startsWith('Exec Server: ') ? msg.slice(13) : `cannot connect to ${where}: ${msg}`)}`);
  }
}

/**
 * The executor to run in the container: the one found there, or this extension's CLI installed
 * (or updated) once the user agrees (a programmatic caller passes install: true). Undefined: the
 * user declined and there is nothing to run.
 */
async function executorIn(d: ContainerCommandDeps, target: ContainerTarget, args: Record<string, unknown> | undefined, programmatic: boolean): Promise<{ executor: ContainerExecutor; installed: boolean } | undefined> {
  const where = describeTarget(target);
  let facts = await runWithProgress(`Exec Server: looking into ${where}`, (_p, signal) => probeContainer(target, { signal }));
  d.log.info(`Connect to Container: ${where}: ${factsSummary(facts)}; exec-server ${facts.execServer ?? '-'}, installed ${facts.installed ?? '-'}, codex ${facts.codexExecServer ? facts.codex : '-'}`);
  let executor: ContainerExecutor | undefined = chooseContainerExecutor(facts);
  const version = String((d.ctx.extension.packageJSON as { version?: string }).version ?? '0.0.0');
  let installed = false;
  const outdated = executor?.kind === 'installed' && isOutdated(facts.installedVersion, version);
  if (!executor || outdated) {
    const bundle = findBundle(d.ctx.extensionPath, version);
    const plan = planContainerInstall(target, facts, bundle); // throws the reason it cannot work
    let install = args?.install === true;
    if (!install) {
      if (programmatic && !executor) throw new Error(`no exec-server in ${where} (pass install: true to install the CLI there)`);
      const ok = programmatic
        ? undefined
        : await vscode.window.showInformationMessage(
            executor ? `Exec Server: ${where} has ${facts.installedVersion || 'an older version'} of the CLI; this extension carries ${version}.` : `Exec Server: no exec-server found in ${where} (${factsSummary(facts)}).`,
            { modal: true, detail: `Install this extension's CLI there? It is copied into ${facts.home}/.exec-server in the container with ${target.program} cp (${plan.summary}); nothing else is changed.` },
            'Install',
          );
      if (ok !== 'Install' && !executor) return undefined;
      install = ok === 'Install';
    }
    if (install) {
      await runWithProgress(`Exec Server: installing in ${where}`, async (p, signal) => {
        p.report({ message: plan.summary });
        await installInContainer(target, facts, bundle, plan, {
          signal,
          onProgress: (line) => {
            d.log.info(`[install ${where}] ${line}`);
            p.report({ message: noLinks(line.slice(0, 120)) });
          },
        });
        facts = await probeContainer(target, { signal });
      });
      executor = chooseContainerExecutor(facts);
      installed = true;
    }
  }
  if (!executor) throw new Error(`the CLI was installed in ${where} but is not found there (${facts.home}/.exec-server/bin/exec-server)`);
  return { executor, installed };
}

/** A container environment lost its connection: say why, and reconnect once it runs again. */
function watchContainerRestarts(d: ContainerCommandDeps): void {
  const watching = new Map<string, AbortController>();
  d.ctx.subscriptions.push(
    { dispose: () => watching.forEach((w) => w.abort()) },
    d.manager.onDidLoseConnection(({ environment }) => {
      const c = d.store.get(environment);
      const found = c?.kind === 'command' ? targetOfCommand(c.command!, c.args ?? []) : undefined;
      if (!found || watching.has(environment)) return;
      const ac = new AbortController();
      watching.set(environment, ac);
      void reconnectWhenRunning(d, environment, found.target, ac.signal).finally(() => watching.delete(environment));
    }),
  );
}

async function reconnectWhenRunning(d: ContainerCommandDeps, environment: string, t: ContainerTarget, signal: AbortSignal): Promise<void> {
  try {
    const s = await containerState(t);
    if (!s || s.running) return; // the manager's own reconnect attempts cover a live container
    const where = describeTarget(t);
    d.log.warn(`${environment}: ${where} ${s.gone ? 'was removed' : `stopped (${s.status})`}`);
    void vscode.window.showWarningMessage(noLinks(s.gone ? `Exec Server: ${where} was removed (${environment}).` : `Exec Server: ${where} stopped (${s.status}); ${environment} reconnects when it runs again.`));
    if (!(await waitUntilRunning(t, { signal }))) return;
    if (d.manager.state(environment) === 'connected') return;
    d.log.info(`${environment}: ${where} runs again; reconnecting`);
    await d.manager.getClient(environment);
    d.refresh();
    void vscode.window.showInformationMessage(noLinks(`Exec Server: ${where} runs again; reconnected to ${environment}.`));
  } catch (e) {
    d.log.warn(`${environment}: reconnecting after the container restarted failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}
