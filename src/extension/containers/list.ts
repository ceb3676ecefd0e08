// The running containers as podman, docker and kubectl print them: podman `ps --format json` is
// one JSON array (Names an array, Labels an object), docker `ps --format json` one JSON object
// per line (Names a comma-separated string, Labels "k=v,k=v"), `kubectl get pods -o json` a
// List of pods with their containers. Everything here is what a container's creator chose
// (names, images, labels): rows whose name could not go on a command line are left out with a
// problem, the rest is data for the picker, never markup. Free of `vscode`.
import { checkEngineName, checkKubeName } from './target';

export interface ContainerInfo {
  cli: 'podman' | 'docker';
  id: string;
  name: string;
  image: string;
  /** running, exited, paused, … (lower case). */
  state: string;
  /** "Up 5 minutes" */
  status: string;
  labels: Record<string, string>;
}

export interface PodContainerInfo {
  namespace: string;
  pod: string;
  container: string;
  image: string;
  /** The pod's phase: Running, Pending, … */
  phase: string;
  /** This container is running (status.containerStatuses[].state.running). */
  running: boolean;
}

export interface Listing<T> {
  items: T[];
  problems: string[];
}

const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

function labelsOf(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = str(x);
  } else if (typeof v === 'string' && v) {
    // docker's "k=v,k=v": a value holding a comma cannot be told apart; display only.
    for (const part of v.split(',')) {
      const eq = part.indexOf('=');
      if (eq > 0) out[part.slice(0, eq)] = part.slice(eq + 1);
    }
  }
  return out;
}

function containerOf(cli: 'podman' | 'docker', o: Record<string, unknown>, problems: string[]): ContainerInfo | undefined {
  const names = Array.isArray(o.Names) ? o.Names.map(str) : str(o.Names).split(',');
  const id = str(o.Id ?? o.ID);
  const name = (names.find((n) => n !== '') ?? '').replace(/^\//, '') || id;
  try {
    checkEngineName('container name', name);
  } catch (e) {
    problems.push(`${cli}: a container is left out: ${(e as Error).message}`);
    return undefined;
  }
  return { cli, id, name, image: str(o.Image), state: str(o.State).toLowerCase(), status: str(o.Status), labels: labelsOf(o.Labels) };
}

/** `ps --format json` of podman (an array) or docker (one object per line); also an empty output. */
export function parseContainerList(cli: 'podman' | 'docker', stdout: string): Listing<ContainerInfo> {
  const problems: string[] = [];
  const items: ContainerInfo[] = [];
  const text = stdout.trim();
  if (!text) return { items, problems };
  let rows: unknown[];
  if (text.startsWith('[')) {
    try {
      const v = JSON.parse(text) as unknown;
      rows = Array.isArray(v) ? v : [];
    } catch (e) {
      throw new Error(`${cli} ps printed no JSON list: ${(e as Error).message}`);
    }
  } else {
    rows = [];
    for (const [i, line] of text.split(/\r?\n/).entries()) {
      if (!line.trim()) continue;
      try {
        rows.push(JSON.parse(line));
      } catch {
        throw new Error(`${cli} ps printed a line that is not JSON (line ${i + 1}): ${JSON.stringify(line.slice(0, 80))}`);
      }
    }
  }
  for (const r of rows) {
    if (!r || typeof r !== 'object') continue;
    const c = containerOf(cli, r as Record<string, unknown>, problems);
    if (c) items.push(c);
  }
  return { items, problems };
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** `kubectl get pods -o json` (a List, or one Pod): one row per container of each pod. */
export function parsePodList(stdout: string): Listing<PodContainerInfo> {
  let v: unknown;
  try {
    v = JSON.parse(stdout);
  } catch (e) {
    throw new Error(`kubectl get pods printed no JSON: ${(e as Error).message}`);
  }
  const root = obj(v);
  const pods = root.kind === 'Pod' ? [root] : arr(root.items);
  const items: PodContainerInfo[] = [];
  const problems: string[] = [];
  for (const p of pods.map(obj)) {
    const meta = obj(p.metadata);
    const namespace = str(meta.namespace) || 'default';
    const pod = str(meta.name);
    const statuses = new Map(arr(obj(p.status).containerStatuses).map((s) => [str(obj(s).name), obj(s)] as const));
    for (const c of arr(obj(p.spec).containers).map(obj)) {
      const container = str(c.name);
      try {
        checkKubeName('namespace', namespace);
        checkKubeName('pod name', pod);
        checkKubeName('container name', container);
      } catch (e) {
        problems.push(`kubectl: a container is left out: ${(e as Error).message}`);
        continue;
      }
      const st = statuses.get(container);
      items.push({ namespace, pod, container, image: str(c.image), phase: str(obj(p.status).phase), running: !!st && 'running' in obj(st.state) });
    }
  }
  return { items, problems };
}

/**
 * Running or not, from `inspect --format json` (podman/docker: an array of one object with
 * State.Running / State.Status) or `kubectl get pod -o json` (the container's state, or the
 * pod's phase). Undefined when the output says nothing about it.
 */
export function parseRunning(cli: 'podman' | 'docker' | 'kubectl', stdout: string, container?: string): { running: boolean; status: string } | undefined {
  let v: unknown;
  try {
    v = JSON.parse(stdout);
  } catch {
    return undefined;
  }
  if (cli === 'kubectl') {
    const p = obj(v);
    const phase = str(obj(p.status).phase);
    const statuses = arr(obj(p.status).containerStatuses).map(obj);
    const st = container ? statuses.find((s) => str(s.name) === container) : statuses[0];
    if (!st) return phase ? { running: false, status: phase } : undefined;
    const state = obj(st.state);
    const key = Object.keys(state)[0] ?? phase;
    return { running: 'running' in state, status: key };
  }
  const first = obj(Array.isArray(v) ? v[0] : v);
  const state = obj(first.State);
  if (typeof state.Running !== 'boolean') return undefined;
  return { running: state.Running === true && state.Paused !== true, status: str(state.Status) || (state.Running ? 'running' : 'stopped') };
}
