// Running the container CLIs (podman, docker, kubectl) for Connect to Container: which one to
// use (the settings: `auto` tries podman then docker, or a name / path), the shared bounded
// runner set for them (stdout capped, stderr kept as its last part) and the error that names
// the CLI and quotes what it said — cut to a few lines, control characters and link syntax
// removed, since it ends up in a notification. Free of `vscode`.
import { HeadTail, noLinks, runChild, type ChildResult, type RunChildOptions } from '../common';
import { cliKindOf, type ContainerCliKind } from './target';

/** execServer.containers.* / execServer.kubernetes.* (user settings). */
export interface ContainerSettings {
  /** 'auto' (podman, then docker), 'podman', 'docker' or a path to either. */
  cli: string;
  /** podman --connection / docker --context ('' = the CLI's default). */
  context: string;
  /** kubectl program ('' = kubectl on PATH). */
  kubectl: string;
  /** kubectl --context ('' = the current context). */
  kubeContext: string;
}

export const DEFAULT_CONTAINER_SETTINGS: ContainerSettings = { cli: 'auto', context: '', kubectl: '', kubeContext: '' };

/** The engine CLIs to try for a `cli` setting: [kind, program] pairs, in order. */
export function engineCandidates(cli: string): { cli: 'podman' | 'docker'; program: string }[] {
  const v = cli.trim();
  if (!v || v === 'auto') return [{ cli: 'podman', program: 'podman' }, { cli: 'docker', program: 'docker' }];
  const kind = cliKindOf(v);
  if (kind === 'podman' || kind === 'docker') return [{ cli: kind, program: v }];
  throw new ContainerCliError(v, `execServer.containers.cli is "${v}": give "auto", "podman", "docker" or the path of a podman or docker program`);
}

// eslint-disable-next-line no-control-regex
// An escape sequence first (else its ESC alone goes and "[31m" stays), then any other control character.
const CONTROL = /\u001b\[[0-9;?]*[A-Za-z]|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** What a CLI printed on stderr, fit for one notification: its last `lines` non-empty lines, each cut, no control characters, no links. */
export function boundedStderr(stderr: string, lines = 3, width = 300): string {
  const kept = stderr
    .replace(CONTROL, '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-lines)
    .map((l) => (l.length > width ? `${l.slice(0, width)}…` : l));
  return noLinks(kept.join(' | '));
}

export class ContainerCliError extends Error {
  constructor(
    /** The program that failed (podman, docker, kubectl, a path). */
    readonly program: string,
    message: string,
    readonly stderr = '',
  ) {
    const said = boundedStderr(stderr);
    super(noLinks(`${message.replace(CONTROL, '')}${said ? ` (${program}: ${said})` : ''}`));
    this.name = 'ContainerCliError';
  }
}

export type CliResult = ChildResult;

/** stdout a listing or probe may print (a container with thousands of entries stays far below). */
const MAX_STDOUT = 16 * 1024 * 1024;
/** stderr kept: its tail, where a CLI's error is. */
const MAX_STDERR = 16 * 1024;

export type RunCliOptions = RunChildOptions;

/** Runs `program argv…` (no shell); rejects with ContainerCliError when it cannot start, times out, or floods stdout. */
export function runCli(program: string, argv: readonly string[], opts: RunCliOptions = {}): Promise<CliResult> {
  return runChild(program, argv, {
    maxStdout: MAX_STDOUT,
    stderr: new HeadTail(0, MAX_STDERR),
    maxLine: MAX_STDERR,
    errors: {
      spawnFailed: (e) => (e.code === 'ENOENT' ? new ContainerCliError(program, `${program} is not installed (not found on the PATH)`) : new ContainerCliError(program, `cannot run ${program}: ${e.message}`)),
      timedOut: (stderr, ms) => new ContainerCliError(program, `${program} ${argv[0] ?? ''} gave no answer within ${Math.round(ms / 1000)} s`, stderr),
      stdoutFlood: (max) => new ContainerCliError(program, `${program} printed more than ${max / 1048576} MiB where a listing was expected; stopped`),
    },
  }, opts);
}

/** Rejects with the CLI's words when it exited non-zero. */
export async function runCliOk(program: string, argv: readonly string[], what: string, opts: RunCliOptions = {}): Promise<CliResult> {
  const r = await runCli(program, argv, opts);
  if (r.code !== 0) throw new ContainerCliError(program, `${what} failed (${program} exited ${r.code ?? r.signal})`, r.stderr);
  return r;
}

export interface DetectedCli {
  cli: ContainerCliKind;
  program: string;
  /** `podman version 4.3.1`; undefined when it did not run. */
  version?: string;
  /** Why it cannot be used (not installed, does not run). */
  error?: string;
}

/** Runs `<program> --version` for each candidate. */
export async function detectClis(candidates: { cli: ContainerCliKind; program: string }[], opts: { timeoutMs?: number } = {}): Promise<DetectedCli[]> {
  return Promise.all(
    candidates.map(async (c) => {
      try {
        const r = await runCli(c.program, ['--version'], { timeoutMs: opts.timeoutMs ?? 15_000 });
        if (r.code !== 0) return { ...c, error: new ContainerCliError(c.program, `${c.program} --version exited ${r.code ?? r.signal}`, r.stderr).message };
        return { ...c, version: boundedStderr(r.stdout.split('\n')[0] ?? '', 1, 120) };
      } catch (e) {
        return { ...c, error: (e as Error).message };
      }
    }),
  );
}
