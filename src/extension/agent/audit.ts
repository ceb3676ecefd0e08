// The audit trail of an agent endpoint: every request its gate decided — when, which endpoint
// (environment) and connection, the request as logged (bulk bytes as sizes, secret values
// masked: gate.ts redactForLog), allowed or refused, by a rule or by the user, and why (the
// rule, or the answer). Bounded: the oldest records go first. Exported as JSON Lines.
// With a file (the extension's storage folder: one per environment) the log outlives a window
// reload: each record is appended as one JSON line (0600, in a 0700 folder) and the file is
// read back when the endpoint starts again; past twice the bound it is rewritten with the
// records kept. A line that does not read as a record is skipped.
import { appendFileSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface AuditRecord {
  /** ISO time of the decision. */
  time: string;
  environment: string;
  connection: string;
  client?: string;
  method: string;
  /** The request, redacted (redactForLog). */
  request: string;
  outcome: 'allowed' | 'refused';
  by: 'rule' | 'user';
  /** The rule ("sandboxed inside the workspace", "policy neverAsk"…) or the user's answer / why none came. */
  why: string;
}

export const MAX_AUDIT_RECORDS = 5000;

/** Of a file larger than this only the end is read back (its older records would be dropped anyway). */
const MAX_READ_BYTES = 32 * 1024 * 1024;

const isRecord = (r: unknown): r is AuditRecord => {
  const o = r as Record<string, unknown> | null;
  return (
    typeof o === 'object' && o !== null &&
    ['time', 'environment', 'connection', 'method', 'request', 'why'].every((k) => typeof o[k] === 'string') &&
    (o.outcome === 'allowed' || o.outcome === 'refused') && (o.by === 'rule' || o.by === 'user')
  );
};

export class AuditLog {
  private readonly records: AuditRecord[] = [];
  /** Records dropped because the log was full. */
  dropped = 0;
  /** Lines in the file (what was read back plus what was appended since). */
  private fileLines = 0;

  constructor(
    readonly environment: string,
    private readonly max = MAX_AUDIT_RECORDS,
    /** Where the log is kept across reloads (undefined: memory only). */
    private readonly file?: string,
    private readonly log?: (message: string) => void,
  ) {
    if (file) this.load(file);
  }

  private load(file: string): void {
    let text: string;
    try {
      const size = statSync(file).size;
      const buf = readFileSync(file);
      text = buf.subarray(Math.max(0, size - MAX_READ_BYTES)).toString('utf8');
    } catch {
      return; // none yet
    }
    for (const line of text.split('\n')) {
      if (!line) continue;
      this.fileLines++;
      try {
        const r = JSON.parse(line) as unknown;
        if (isRecord(r) && r.environment === this.environment) this.records.push(r);
      } catch {
        /* a line cut by a crash, or the head of a tail read */
      }
    }
    if (this.records.length > this.max) this.records.splice(0, this.records.length - this.max);
  }

  add(r: Omit<AuditRecord, 'time' | 'environment'>): void {
    const record: AuditRecord = { time: new Date().toISOString(), environment: this.environment, ...r };
    this.records.push(record);
    if (this.records.length > this.max) {
      this.records.splice(0, this.records.length - this.max);
      this.dropped++;
    }
    if (this.file) this.persist(record, this.file);
  }

  private persist(record: AuditRecord, file: string): void {
    try {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      if (this.fileLines + 1 > 2 * this.max) {
        // Rewritten whole, then renamed over: a crash leaves the old file or the new one.
        const tmp = `${file}.${process.pid}.tmp`;
        writeFileSync(tmp, this.toJsonLines(), { mode: 0o600 });
        renameSync(tmp, file);
        this.fileLines = this.records.length;
      } else {
        appendFileSync(file, `${JSON.stringify(record)}\n`, { mode: 0o600 });
        this.fileLines++;
      }
    } catch (e) {
      this.log?.(`audit log ${file}: ${e instanceof Error ? e.message : String(e)} (kept in memory only)`);
    }
  }

  list(): readonly AuditRecord[] {
    return this.records;
  }

  toJsonLines(): string {
    return this.records.map((r) => JSON.stringify(r)).join('\n') + (this.records.length ? '\n' : '');
  }
}

/** The file of `environment`'s audit log in `dir` (names are URI-safe already; encoded to be sure). */
export function auditFileOf(dir: string, environment: string): string {
  return path.join(dir, `${encodeURIComponent(environment)}.jsonl`);
}
