// Where a container environment runs and the argv of every CLI call made for it: `podman exec`,
// `docker exec` and `kubectl exec` (the same path for all three), `cp`, `inspect`, `ps`. Every
// call is an argv array handed to spawn (never a shell), flags that carry a value are one word
// (`--context=NAME`), and a `--` ends the flags before a container name where the CLI supports it
// (podman, docker), so a name or label cannot become an option (`-uroot`, `-w…`) or a command.
// kubectl reads the pod before its `--`: pod, namespace and container names are checked against
// Kubernetes' own name rules instead. Also the saved environment's name and the reverse: a saved
// command environment read back as its target (for the stopped/restarted watcher). Free of `vscode`.
import path from 'node:path';

export type ContainerCliKind = 'podman' | 'docker' | 'kubectl';

/** A container of podman or docker. */
export interface EngineTarget {
  cli: 'podman' | 'docker';
  /** The program run (`podman`, `docker` or a path from the settings). */
  program: string;
  /** podman --connection= / docker --context= ('' or undefined: the CLI's default). */
  context?: string;
  /** The container's name (or id). */
  container: string;
}

/** A container of a Kubernetes pod. */
export interface PodTarget {
  cli: 'kubectl';
  program: string;
  /** kubectl --context= */
  context?: string;
  namespace: string;
  pod: string;
  /** The container in the pod ('' / undefined: the pod's default container). */
  container?: string;
}

export type ContainerTarget = EngineTarget | PodTarget;

export class ContainerNameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContainerNameError';
  }
}

// Control characters (a newline would start a new line of a log or notification) and a
// leading dash (an option to the CLI) are refused in anything that goes on a command line.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** podman/docker names: the engines accept [a-zA-Z0-9][a-zA-Z0-9_.-]*; an id is hex. Spaces are kept (argv) but a leading '-' is not. */
export function checkEngineName(what: string, s: string): string {
  if (typeof s !== 'string' || s === '') throw new ContainerNameError(`the ${what} is empty`);
  if (s.length > 255) throw new ContainerNameError(`the ${what} is longer than 255 characters`);
  if (CONTROL.test(s)) throw new ContainerNameError(`the ${what} ${JSON.stringify(s)} holds a control character`);
  if (s.startsWith('-')) throw new ContainerNameError(`the ${what} ${JSON.stringify(s)} starts with "-" (it would read as an option)`);
  return s;
}

/** Kubernetes object names (RFC 1123 labels / subdomains): lower case, digits, '-' and '.', 253 at most. */
const K8S_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
export function checkKubeName(what: string, s: string): string {
  if (typeof s !== 'string' || s === '') throw new ContainerNameError(`the ${what} is empty`);
  if (s.length > 253 || !K8S_NAME.test(s)) throw new ContainerNameError(`the ${what} ${JSON.stringify(s.slice(0, 80))} is not a Kubernetes name (lower-case letters, digits, "-" and ".")`);
  return s;
}

/** A context / connection name from the settings: one word, no control character, no leading '-'. */
function checkContext(s: string | undefined): string | undefined {
  if (!s) return undefined;
  return checkEngineName('context', s);
}

/** The CLI's global flags (before the subcommand): the context / connection to talk to. */
export function contextArgs(cli: ContainerCliKind, context: string | undefined): string[] {
  const ctx = checkContext(context);
  if (!ctx) return [];
  return [cli === 'podman' ? `--connection=${ctx}` : `--context=${ctx}`];
}
const globalArgs = (t: ContainerTarget) => contextArgs(t.cli, t.context);

/** Checks every name of `t`; returns it (throws ContainerNameError). */
export function checkTarget(t: ContainerTarget): ContainerTarget {
  if (!t.program || CONTROL.test(t.program)) throw new ContainerNameError('the container CLI path is empty or holds a control character');
  checkContext(t.context);
  if (t.cli === 'kubectl') {
    checkKubeName('namespace', t.namespace);
    checkKubeName('pod name', t.pod);
    if (t.container) checkKubeName('container name', t.container);
  } else checkEngineName('container name', t.container);
  return t;
}

/**
 * `<cli> exec -i … -- <command…>`: runs `command` (argv, no shell) inside the container with
 * stdin open (the stdio transport). No TTY: the protocol is JSON lines, a TTY would mangle it.
 */
export function execArgv(t: ContainerTarget, command: readonly string[]): string[] {
  checkTarget(t);
  if (command.length === 0 || command[0] === '') throw new ContainerNameError('the command to run in the container is empty');
  if (t.cli === 'kubectl') {
    return [...globalArgs(t), 'exec', '-i', `--namespace=${t.namespace}`, t.pod, ...(t.container ? [`--container=${t.container}`] : []), '--', ...command];
  }
  // podman/docker: options, `--`, the container, then the command (their exec parses no flag after the name).
  return [...globalArgs(t), 'exec', '-i', '--', t.container, ...command];
}

/** Copies the local folder `from` (its contents) to `to` inside the container. */
export function cpArgv(t: ContainerTarget, from: string, to: string): string[] {
  checkTarget(t);
  if (!to.startsWith('/')) throw new ContainerNameError(`the destination in the container must be an absolute path (got ${JSON.stringify(to)})`);
  const src = from.endsWith('/.') ? from : `${from}/.`;
  if (t.cli === 'kubectl') {
    // kubectl cp reads `[namespace/]pod:path`; it needs tar in the container.
    return [...globalArgs(t), 'cp', `--namespace=${t.namespace}`, ...(t.container ? [`--container=${t.container}`] : []), '--', src, `${t.pod}:${to}`];
  }
  return [...globalArgs(t), 'cp', '--', src, `${t.container}:${to}`];
}

/** The container's state as JSON (podman/docker inspect; kubectl get pod). */
export function inspectArgv(t: ContainerTarget): string[] {
  checkTarget(t);
  if (t.cli === 'kubectl') return [...globalArgs(t), 'get', 'pod', `--namespace=${t.namespace}`, '--output=json', '--', t.pod];
  return [...globalArgs(t), 'inspect', '--type=container', '--format=json', '--', t.container];
}

/** The running containers (podman/docker), or the pods of a namespace ('' = all namespaces) as JSON. */
export function listArgv(cli: ContainerCliKind, context?: string, namespace?: string): string[] {
  const g = contextArgs(cli, context);
  if (cli === 'kubectl') return [...g, 'get', 'pods', namespace ? `--namespace=${checkKubeName('namespace', namespace)}` : '--all-namespaces', '--output=json'];
  // podman: one JSON array. docker: one JSON object per line — `{{json .}}` rather than `json`,
  // which docker clients before 23 print as the literal word.
  return [...g, 'ps', '--no-trunc', cli === 'docker' ? '--format={{json .}}' : '--format=json'];
}

/** What is shown and what the environment is called: `podman-web`, `docker-my-db`, `pod-ns-name-container`. */
export function environmentNameFor(t: ContainerTarget): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9._]+/g, '-').replace(/^-+|-+$/g, '');
  const parts = t.cli === 'kubectl' ? ['pod', t.namespace, t.pod, t.container ?? ''] : [t.cli, t.container];
  const name = parts.map(clean).filter(Boolean).join('-').slice(0, 64).replace(/-+$/, '');
  return name || t.cli;
}

/** For messages: `podman container "web"`, `pod default/api (container app)`. */
export function describeTarget(t: ContainerTarget): string {
  if (t.cli === 'kubectl') return `pod ${t.namespace}/${t.pod}${t.container ? ` (container ${t.container})` : ''}`;
  return `${t.cli} container "${t.container}"`;
}

/** Which CLI a program is: its file name (podman, docker, kubectl, also e.g. podman-remote, docker.exe). */
export function cliKindOf(program: string): ContainerCliKind | undefined {
  const base = path.basename(program).toLowerCase().replace(/\.exe$/, '');
  if (/^podman(-remote)?$/.test(base)) return 'podman';
  if (base === 'docker') return 'docker';
  if (base === 'kubectl') return 'kubectl';
  return undefined;
}

/**
 * A saved command environment read back as the container it runs in (undefined when it is not
 * one this module wrote: the exact shape execArgv builds). The command after `--` is returned too.
 */
export function targetOfCommand(command: string, args: readonly string[]): { target: ContainerTarget; command: string[] } | undefined {
  const cli = cliKindOf(command);
  if (!cli) return undefined;
  let i = 0;
  let context: string | undefined;
  const ctxFlag = cli === 'podman' ? '--connection=' : '--context=';
  if (args[i]?.startsWith(ctxFlag)) context = args[i++].slice(ctxFlag.length);
  if (args[i++] !== 'exec' || args[i++] !== '-i') return undefined;
  let target: ContainerTarget;
  if (cli === 'kubectl') {
    const ns = args[i++];
    if (!ns?.startsWith('--namespace=')) return undefined;
    const pod = args[i++];
    let container: string | undefined;
    if (args[i]?.startsWith('--container=')) container = args[i++].slice('--container='.length);
    if (args[i++] !== '--') return undefined;
    target = { cli, program: command, ...(context ? { context } : {}), namespace: ns.slice('--namespace='.length), pod, ...(container ? { container } : {}) };
  } else {
    if (args[i++] !== '--') return undefined;
    const container = args[i++];
    target = { cli, program: command, ...(context ? { context } : {}), container };
  }
  const rest = args.slice(i);
  if (!rest.length) return undefined;
  try {
    checkTarget(target);
  } catch {
    return undefined;
  }
  return { target, command: [...rest] };
}

/**
 * The name to save a container environment under: `wanted` (or the target's name) when free,
 * the same entry when it is this very definition (`existing`: nothing to save) or the same
 * container with another executor (updated), else the first free `name-N`.
 */
export function chooseContainerEnvironmentName(
  base: string,
  input: { command: string; args: string[] },
  list: readonly { name: string; kind: string; command?: string; args?: string[] }[],
): { name: string; existing: boolean } {
  const mine = targetOfCommand(input.command, input.args);
  for (let i = 1; i < 100; i++) {
    const name = i === 1 ? base : `${base.slice(0, 60)}-${i}`;
    const e = list.find((x) => x.name.toLowerCase() === name.toLowerCase());
    if (!e) return { name, existing: false };
    if (e.kind !== 'command' || e.command !== input.command) continue;
    if (JSON.stringify(e.args ?? []) === JSON.stringify(input.args)) return { name: e.name, existing: true };
    const theirs = targetOfCommand(e.command, e.args ?? []);
    if (mine && theirs && JSON.stringify(theirs.target) === JSON.stringify(mine.target)) return { name: e.name, existing: false };
  }
  throw new Error(`no free environment name for ${base}`);
}
