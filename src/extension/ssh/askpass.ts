// ssh's own questions — a password, a key's passphrase, a keyboard-interactive question (a
// one-time code) — answered by the user in VS Code instead of on a terminal nobody sees. ssh runs
// with SSH_ASKPASS pointing at a tiny helper and SSH_ASKPASS_REQUIRE=force; ssh runs the helper
// with the prompt as its only argument and reads the answer from its stdout. The helper talks
// to this process over a unix socket in a private folder (0700, made per extension host), naming
// its ssh process by a random session id from its environment; the answer travels back on that
// socket and through the helper's stdout into ssh — never in an argv, a file or a log line (the
// prompt is logged, the answer never).
// One question at a time (VS Code shows one input box): a second ssh asking waits its turn.
// A password or passphrase the user typed is remembered in memory for REMEMBER_MS, for the same
// destination and the same prompt only, so the few ssh logins of one Connect to Host (probe,
// install, the detached server, `ssh -W`) and a reconnect soon after ask once; the same ssh
// process asking the same prompt again means the answer was refused: it is forgotten and the
// user asked again. Keyboard-interactive answers (one-time codes) are never remembered.
// A host-key question ("continue connecting (yes/no)?") is refused here: trust on first use is
// Connect to Host's own modal (./ui/trust.ts), which shows the fingerprints. Free of `vscode`.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

export type PromptKind = 'password' | 'passphrase' | 'question' | 'host-key' | 'notice';

export interface AskpassPrompt {
  /** The ssh destination the asking process was started for (as the UI names it). */
  target: string;
  /** ssh's prompt, control characters removed, at most 500 characters. */
  prompt: string;
  kind: PromptKind;
  /** The same ssh process asked this before: the previous answer was refused. */
  retry: boolean;
  /** Aborted when the ssh process is gone (or the service closes): hide the question. */
  signal: AbortSignal;
}

/** Shows the question; the answer, or undefined (cancelled: ssh fails the login). */
export type Ask = (p: AskpassPrompt) => Promise<string | undefined>;

/** What one ssh process needs: its environment additions, and the end of its session. */
export interface AskpassSession {
  env: Record<string, string>;
  dispose(): void;
}

/** Hands out askpass sessions (SshOptions.askpass). */
export interface AskpassProvider {
  open(target: string): AskpassSession;
}

export const REMEMBER_MS = 5 * 60_000;
/** A helper's request line larger than this is not a prompt. */
const MAX_REQUEST = 16 * 1024;

/** What kind of question `prompt` is (SSH_ASKPASS_PROMPT: ssh's hint, "confirm" / "none"). */
export function classifyPrompt(prompt: string, hint = ''): PromptKind {
  if (hint === 'none') return 'notice';
  if (/\(yes\/no(\/\[fingerprint\])?\)\?|continue connecting/i.test(prompt)) return 'host-key';
  if (hint === 'confirm') return 'host-key';
  if (/passphrase/i.test(prompt)) return 'passphrase';
  // "user@host's password: ", keyboard-interactive "(user@host) Password: " (PAM's pam_unix).
  if (/password/i.test(prompt) && !/(one[- ]time|verification|code|token|otp)/i.test(prompt)) return 'password';
  return 'question';
}

/** The prompt as shown: no control characters (a host chooses keyboard-interactive text), bounded. */
export function cleanPrompt(s: string): string {
  // eslint-disable-next-line no-control-regex
  const t = s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '').replace(/\s*\n\s*/g, ' ').trim();
  return t.length > 500 ? `${t.slice(0, 500)}…` : t;
}

/** The helper ssh runs: one request line out, one answer line back, the answer on stdout. */
export const HELPER_SOURCE = `'use strict';
const net = require('net');
const sock = process.env.EXEC_SERVER_ASKPASS_SOCKET;
const session = process.env.EXEC_SERVER_ASKPASS_SESSION;
if (!sock || !session) process.exit(1);
const c = net.connect(sock);
let buf = '';
c.setEncoding('utf8');
c.on('connect', () => c.write(JSON.stringify({ session, prompt: process.argv[2] || '', hint: process.env.SSH_ASKPASS_PROMPT || '' }) + '\\n'));
c.on('data', (d) => { buf += d; if (buf.length > 65536) process.exit(1); });
c.on('error', () => process.exit(1));
// ssh gone (killed while the user is still asked): this helper would hold ssh's stderr open.
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) process.exit(1); }, 500).unref();
c.on('close', () => {
  let r;
  try { r = JSON.parse(buf); } catch (e) { process.exit(1); }
  if (!r || typeof r.answer !== 'string') process.exit(1);
  process.stdout.write(r.answer + '\\n', () => process.exit(0));
});
`;

const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

interface Live {
  target: string;
  /** Prompts this process asked already (a repeat: the answer was refused). */
  asked: Set<string>;
  abort: AbortController;
  sockets: Set<net.Socket>;
  /** The user cancelled a question: ssh asks again after a failed answer, the user is not. */
  cancelled: boolean;
}

/**
 * The socket, the helper and the sessions of one extension host. `node`: the program that runs
 * the helper (the extension host's own executable: ELECTRON_RUN_AS_NODE makes VS Code's a Node).
 */
export class AskpassService implements AskpassProvider {
  private readonly sessions = new Map<string, Live>();
  private readonly remembered = new Map<string, { answer: string; until: number }>();
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    readonly dir: string,
    private readonly server: net.Server,
    private readonly ask: Ask,
    private readonly log: (message: string) => void,
    private readonly now: () => number,
  ) {
    server.on('connection', (s) => this.serve(s));
  }

  static async start(ask: Ask, opts: { log?: (message: string) => void; node?: string; parent?: string; now?: () => number } = {}): Promise<AskpassService> {
    // mkdtemp makes the folder 0700: only this user can reach the socket or replace the helper.
    const dir = fs.mkdtempSync(path.join(opts.parent ?? os.tmpdir(), 'exec-server-askpass-'));
    fs.chmodSync(dir, 0o700);
    fs.writeFileSync(path.join(dir, 'askpass.js'), HELPER_SOURCE, { mode: 0o600 });
    const node = opts.node ?? process.execPath;
    fs.writeFileSync(path.join(dir, 'askpass.sh'), `#!/bin/sh\nELECTRON_RUN_AS_NODE=1 exec ${shQuote(node)} ${shQuote(path.join(dir, 'askpass.js'))} "$@"\n`, { mode: 0o700 });
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path.join(dir, 's'), () => resolve());
    });
    fs.chmodSync(path.join(dir, 's'), 0o600);
    return new AskpassService(dir, server, ask, opts.log ?? (() => undefined), opts.now ?? Date.now);
  }

  open(target: string): AskpassSession {
    if (this.closed) throw new Error('the askpass service is closed');
    const id = randomBytes(24).toString('hex');
    const live: Live = { target, asked: new Set(), abort: new AbortController(), sockets: new Set(), cancelled: false };
    this.sessions.set(id, live);
    return {
      env: {
        SSH_ASKPASS: path.join(this.dir, 'askpass.sh'),
        // OpenSSH 8.4+: use the helper although there is no DISPLAY (and whether or not a terminal is).
        SSH_ASKPASS_REQUIRE: 'force',
        EXEC_SERVER_ASKPASS_SOCKET: path.join(this.dir, 's'),
        EXEC_SERVER_ASKPASS_SESSION: id,
      },
      dispose: () => {
        if (this.sessions.get(id) !== live) return;
        this.sessions.delete(id);
        live.abort.abort();
        for (const s of live.sockets) s.destroy();
      },
    };
  }

  /** Forgets every remembered answer (a setting, a failed connection). */
  forget(): void {
    this.remembered.clear();
  }

  /** How many answers are remembered now (tests). */
  get rememberedCount(): number {
    return this.remembered.size;
  }

  close(): void {
    this.closed = true;
    for (const [id, live] of this.sessions) {
      this.sessions.delete(id);
      live.abort.abort();
      for (const s of live.sockets) s.destroy();
    }
    this.remembered.clear();
    this.server.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private session(id: unknown): Live | undefined {
    if (typeof id !== 'string') return undefined;
    for (const [key, live] of this.sessions) {
      const a = Buffer.from(key);
      const b = Buffer.from(id);
      if (a.length === b.length && timingSafeEqual(a, b)) return live;
    }
    return undefined;
  }

  private serve(s: net.Socket): void {
    let buf = '';
    s.setEncoding('utf8');
    s.on('error', () => undefined);
    s.on('data', (d: string) => {
      if (buf.includes('\n')) return;
      buf += d;
      if (buf.length > MAX_REQUEST) return void s.destroy();
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      let req: { session?: unknown; prompt?: unknown; hint?: unknown };
      try {
        req = JSON.parse(buf.slice(0, nl)) as typeof req;
      } catch {
        return void s.destroy();
      }
      const live = this.session(req.session);
      if (!live) return void s.end(JSON.stringify({ refused: 'unknown session' }));
      live.sockets.add(s);
      s.on('close', () => live.sockets.delete(s));
      void this.answer(live, cleanPrompt(String(req.prompt ?? '')), String(req.hint ?? '')).then(
        (answer) => {
          if (!s.destroyed) s.end(JSON.stringify(answer === undefined ? { refused: 'no answer' } : { answer }));
        },
        () => s.destroy(),
      );
    });
  }

  private answer(live: Live, prompt: string, hint: string): Promise<string | undefined> {
    const kind = classifyPrompt(prompt, hint);
    if (kind === 'host-key') {
      this.log(`ssh ${live.target}: host-key question refused (Connect to Host asks with the fingerprints): "${prompt}"`);
      return Promise.resolve(undefined);
    }
    // "Confirm user presence for key …" (a security key): ssh only informs, and ends the helper itself.
    if (kind === 'notice') return Promise.resolve('');
    const key = `${live.target}\n${prompt}`;
    const retry = live.asked.has(prompt);
    live.asked.add(prompt);
    const turn = this.queue.then(async () => {
      if (live.abort.signal.aborted || live.cancelled) return undefined;
      const kept = this.remembered.get(key);
      if (retry || (kept && kept.until < this.now())) this.remembered.delete(key);
      else if (kept) {
        kept.until = this.now() + REMEMBER_MS;
        this.log(`ssh ${live.target} asks "${prompt}": answered with the ${kind} given earlier`);
        return kept.answer;
      }
      this.log(`ssh ${live.target} asks "${prompt}"${retry ? ' again (the answer was refused)' : ''}`);
      const answer = await this.ask({ target: live.target, prompt, kind, retry, signal: live.abort.signal });
      if (answer === undefined) live.cancelled = true;
      if (answer === undefined || live.abort.signal.aborted) return undefined;
      if (kind === 'password' || kind === 'passphrase') this.remembered.set(key, { answer, until: this.now() + REMEMBER_MS });
      return answer;
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }
}

/** `env` for spawn with the session's variables (the rest of this process's environment kept). */
export function withAskpassEnv(session: AskpassSession | undefined): NodeJS.ProcessEnv | undefined {
  return session ? { ...process.env, ...session.env } : undefined;
}

/** ssh options for a process that has a helper: `BatchMode=yes` (no questions at all) turned off. */
export function interactiveOptions(options: string[]): string[] {
  return options.map((o) => (o === 'BatchMode=yes' ? 'BatchMode=no' : o));
}

/** The environment's program is the ssh client (Connect to Host saves `ssh …`; a user may write one). */
export function isSshCommand(command: string | undefined): boolean {
  return !!command && /(^|[/\\])ssh(\.exe)?$/i.test(command);
}

/** How a saved ssh command is run by the extension: its args, its environment, and the end of its askpass session. */
export interface SshLaunch {
  args: string[];
  env: NodeJS.ProcessEnv | undefined;
  /** Call when the ssh process has ended (a question still open is hidden). */
  dispose(): void;
}

/**
 * A saved ssh command (Connect to Host's `ssh … BatchMode=yes … -- host '<executor> --listen
 * stdio://'`, or one a user wrote) as every spawn of it by the extension runs it: BatchMode off
 * and a session of `provider`, so its password, passphrase or one-time-code question reaches the
 * user as the other ssh logins of Connect to Host do (and a password given a moment ago for the
 * same destination serves it unasked). The destination is what follows `--` (as runSsh names
 * it), else `fallbackTarget`. Without a provider: the command as saved.
 */
export function askpassLaunch(args: string[], provider: AskpassProvider | undefined, fallbackTarget = 'the host'): SshLaunch {
  if (!provider) return { args, env: undefined, dispose: () => undefined };
  const dd = args.indexOf('--');
  const target = (dd >= 0 ? args[dd + 1] : undefined) ?? fallbackTarget;
  const session = provider.open(target);
  const options = dd >= 0 ? args.slice(0, dd) : args;
  return { args: [...interactiveOptions(options), ...(dd >= 0 ? args.slice(dd) : [])], env: withAskpassEnv(session), dispose: () => session.dispose() };
}
