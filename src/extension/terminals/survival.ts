// Terminals that survive (docs/reliability.md), without `vscode`: what a terminal shows about its
// connection (followConnection), and the records that let a reloaded window re-attach the
// shells of remote environments — environment, session id, process id, command and cwd of every
// live shell, kept in the workspace state. A window reload ends the extension host but not a
// websocket server's session (it is detached for its TTL), so the next activation resumes the
// session and adopts each process from its retained output.
import type { ClientState } from '../../client/api';
import type { Disposable, Event } from '../../rpc/event';

/** workspaceState key of the records. */
export const TERMINAL_RECORDS_KEY = 'execServer.terminals';
/** A window does not need more; a corrupt or hostile value cannot grow the activation's work. */
export const MAX_TERMINAL_RECORDS = 32;

export interface TerminalRecord {
  environment: string;
  sessionId: string;
  processId: string;
  /** Terminal name. */
  name: string;
  argv: string[];
  cwd: string;
}

/** The slice of vscode.Memento used here. */
export interface RecordStore {
  get(key: string): unknown;
  update(key: string, value: unknown): PromiseLike<void>;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** The workspace state may hold anything (older versions, hand edits): only well-formed records survive. */
export function readTerminalRecords(raw: unknown): TerminalRecord[] {
  if (!Array.isArray(raw)) return [];
  const out: TerminalRecord[] = [];
  for (const r of raw) {
    if (!r || typeof r !== 'object') continue;
    const x = r as Record<string, unknown>;
    if (![x.environment, x.sessionId, x.processId, x.name, x.cwd].every(isString)) continue;
    if (!Array.isArray(x.argv) || x.argv.length === 0 || !x.argv.every((a) => typeof a === 'string')) continue;
    out.push({ environment: x.environment as string, sessionId: x.sessionId as string, processId: x.processId as string, name: x.name as string, argv: [...(x.argv as string[])], cwd: x.cwd as string });
  }
  return out.slice(-MAX_TERMINAL_RECORDS);
}

/** The live shells of this window, written through to the store on every change. */
export class TerminalRecords {
  /** Writes in order: a put and a remove of the same process must not land swapped. */
  private writing: PromiseLike<void> = Promise.resolve();
  constructor(private readonly store: RecordStore) {}

  list(): TerminalRecord[] {
    return readTerminalRecords(this.store.get(TERMINAL_RECORDS_KEY));
  }

  put(record: TerminalRecord): Promise<void> {
    return this.write((list) => [...list.filter((r) => r.processId !== record.processId), record]);
  }

  remove(processId: string): Promise<void> {
    return this.write((list) => list.filter((r) => r.processId !== processId));
  }

  private write(change: (list: TerminalRecord[]) => TerminalRecord[]): Promise<void> {
    const next = Promise.resolve(this.writing).then(() => this.store.update(TERMINAL_RECORDS_KEY, change(this.list()).slice(-MAX_TERMINAL_RECORDS)));
    this.writing = next.then(undefined, () => undefined);
    return Promise.resolve(next);
  }
}

/** What to re-attach per environment: the newest session's records; records of older sessions are gone. */
export function restorePlan(records: TerminalRecord[], restorable: (environment: string) => boolean): {
  environment: string;
  sessionId: string;
  records: TerminalRecord[];
  gone: TerminalRecord[];
}[] {
  const byEnv = new Map<string, TerminalRecord[]>();
  for (const r of records) {
    if (!restorable(r.environment)) continue;
    byEnv.set(r.environment, [...(byEnv.get(r.environment) ?? []), r]);
  }
  return [...byEnv].map(([environment, list]) => {
    const sessionId = list[list.length - 1].sessionId;
    return { environment, sessionId, records: list.filter((r) => r.sessionId === sessionId), gone: list.filter((r) => r.sessionId !== sessionId) };
  });
}

/** What a terminal says about its connection. */
export interface ConnectionNotices {
  connectionLost(): void;
  connectionRestored(): void;
}

/**
 * The terminal follows its client: "connection lost — reconnecting…" as soon as the client
 * starts resuming its session (the drop, not a timeout), "reconnected" once it resumed. A
 * session that cannot be resumed ends the process with an error, which the terminal reports.
 */
export function followConnection(client: { readonly onDidChangeState: Event<ClientState> }, terminal: ConnectionNotices): Disposable {
  return client.onDidChangeState((s) => {
    if (s === 'recovering') terminal.connectionLost();
    else if (s === 'connected') terminal.connectionRestored();
  });
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * What a terminal says when its process was lost: the reason in words, never a session id (a
 * session id is the key to resume the session; it does not belong on screen or in a screenshot).
 */
export function lossMessage(error: string): string {
  if (/unknown session/i.test(error)) return 'the server no longer has this session (it restarted, or the session expired)';
  const failed = /reconnect failed: (.*)/i.exec(error);
  if (failed) return `could not reconnect: ${failed[1].replace(UUID, '…')}`;
  return error.replace(UUID, '…');
}
