// Drives the unmodified `codex app-server` (stdio JSON-RPC, one JSON object per line) against a
// remote environment (an exec-server websocket URL) and a stand-in model (mock-model.ts):
// writes a throwaway CODEX_HOME (config.toml + environments.toml), starts a thread whose
// environment is that exec-server, runs turns, answers Codex's approval requests, and collects
// the items of each turn. Everything it starts is killed on stop() and, as a last resort, when
// the Node process exits. Plain Node (no vscode, no test framework), so the VS Code e2e suite can
// bundle it too: pass `codexBinary` (the reference package's `codex`).
//
// CODEX_HOME is NOT under /tmp: Codex refuses to link its sandbox helper (codex-linux-sandbox)
// into a CODEX_HOME under /tmp (verified for `codex exec-server`, whose sandboxed commands then all
// fail with "bwrap: execvp codex-linux-sandbox"; /var/tmp is fine). It lives under
// ${EXEC_SERVER_CACHE:-~/.cache/exec-server}/codex-homes/<random> and is removed on stop().
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export type SandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access';
export type ApprovalPolicy = 'untrusted' | 'on-request' | 'never';
export type ApprovalDecision = 'accept' | 'acceptForSession' | 'decline' | 'cancel';

/** A request Codex sent to us (the app-server client) during a turn, and what we answered. */
export interface ApprovalRecord {
  method: string; // item/commandExecution/requestApproval, item/fileChange/requestApproval, …
  params: any;
  answer: unknown;
}

export interface CodexAppServerOptions {
  /** Path of the `codex` binary (reference package). */
  codexBinary: string;
  /** Model endpoint, e.g. MockModel.baseUrl (http://127.0.0.1:PORT/v1). */
  modelBaseUrl: string;
  /** The exec-server (or a WsRecorder in front of it) Codex uses as its remote environment. */
  execServerUrl: string;
  /** Sent as `Authorization: Bearer` (environments.toml `auth_bearer_token`). */
  token?: string;
  /** Workspace directory on the exec-server host: the thread's cwd and project root. */
  workspace: string;
  /** config.toml `sandbox_mode`; omitted = Codex's default (read-only). */
  sandboxMode?: SandboxMode;
  /** config.toml `approval_policy`; omitted = Codex's default (on-request). */
  approvalPolicy?: ApprovalPolicy;
  /** Model name Codex is told (default gpt-5.5: a known model, so apply_patch is offered). */
  model?: string;
  /** Environment id in environments.toml (default "remote1"). */
  environmentId?: string;
  /** Decides approval requests (default: accept everything). */
  approve?: (method: string, params: any) => ApprovalDecision;
  /** Extra config.toml text appended verbatim. */
  extraConfig?: string;
  /** Parent directory of the temp CODEX_HOME (default ${EXEC_SERVER_CACHE:-~/.cache/exec-server}/codex-homes). */
  homesDir?: string;
}

export interface TurnResult {
  turnId: string;
  /** 'completed' | 'failed' | 'interrupted' (Turn.status). */
  status: string;
  error: unknown;
  /** Completed items of the turn (item/completed notifications), in order. */
  items: any[];
  /** Approval (and other server → client) requests seen during the turn. */
  approvals: ApprovalRecord[];
}

export interface CodexAppServer {
  codexHome: string;
  /** thread/start with the remote environment; returns the thread id. */
  startThread(): Promise<string>;
  /** turn/start with one text input; resolves when turn/completed arrives. */
  runTurn(threadId: string, text: string, timeoutMs?: number): Promise<TurnResult>;
  /** Sends any app-server request. */
  request(method: string, params: unknown, timeoutMs?: number): Promise<any>;
  /** Every notification received so far ({method, params}). */
  notifications: { method: string; params: any }[];
  stderr(): string;
  /** Kills codex (process group) and removes CODEX_HOME. Idempotent. */
  stop(): Promise<void>;
}

/** Running app-servers and their CODEX_HOMEs: killed / removed when Node exits without stop(). */
const live = new Map<ChildProcess, string>();
let exitHook = false;
function killGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, sig);
  } catch {
    try {
      child.kill(sig);
    } catch {
      /* already gone */
    }
  }
}

/**
 * Path of the reference `codex` binary, as installed by `npm test`'s install stage: asks
 * `<repoRoot>/scripts/tools/install.mjs --find reference` (finds only; never installs, so parallel
 * test files cannot spawn a binary another one is still writing).
 */
export function referenceCodexBinary(repoRoot: string): string {
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts/tools/install.mjs'), '--find', 'reference'], { encoding: 'utf8', timeout: 60_000 });
  const bin = /^REFERENCE=(.+)$/m.exec(r.stdout ?? '')?.[1];
  if (r.status !== 0 || !bin) throw new Error(`the reference codex is not installed (scripts/tools/install.mjs --find reference, exit ${r.status ?? r.signal}): ${r.stderr}`);
  return bin;
}

const tomlString = (s: string) => JSON.stringify(s); // TOML basic strings accept JSON escapes

/** Writes config.toml and environments.toml into `home`. */
export function writeCodexConfig(home: string, o: CodexAppServerOptions): void {
  const lines = [
    `model = ${tomlString(o.model ?? 'gpt-5.5')}`,
    `model_provider = "mock"`,
    ...(o.sandboxMode ? [`sandbox_mode = ${tomlString(o.sandboxMode)}`] : []),
    ...(o.approvalPolicy ? [`approval_policy = ${tomlString(o.approvalPolicy)}`] : []),
    `check_for_update_on_startup = false`,
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[model_providers.mock]',
    'name = "mock"',
    `base_url = ${tomlString(o.modelBaseUrl)}`,
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    'stream_idle_timeout_ms = 20000',
    '',
    o.extraConfig ?? '',
  ];
  writeFileSync(path.join(home, 'config.toml'), lines.join('\n') + '\n');
  const env = [
    '[[environments]]',
    `id = ${tomlString(o.environmentId ?? 'remote1')}`,
    `url = ${tomlString(o.execServerUrl)}`,
    ...(o.token ? [`auth_bearer_token = ${tomlString(o.token)}`] : []),
    'connect_timeout_sec = 10',
    'initialize_timeout_sec = 10',
  ];
  writeFileSync(path.join(home, 'environments.toml'), env.join('\n') + '\n');
}

/** Starts `codex app-server` and initializes it (initialize + initialized). */
export async function startCodexAppServer(o: CodexAppServerOptions): Promise<CodexAppServer> {
  const homesDir = o.homesDir ?? path.join(process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server'), 'codex-homes');
  const codexHome = path.join(homesDir, randomBytes(6).toString('hex'));
  mkdirSync(codexHome, { recursive: true });
  writeCodexConfig(codexHome, o);

  // Nothing from the caller's environment that could point Codex at a real account or config.
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(CODEX_|OPENAI_|RUST_LOG$|npm_)/.test(k)) env[k] = v;
  }
  env.CODEX_HOME = codexHome;
  env.RUST_LOG = process.env.CODEX_TEST_RUST_LOG ?? 'warn';

  const child = spawn(o.codexBinary, ['app-server'], { env, cwd: o.workspace, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  live.set(child, codexHome);
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const [c, home] of live) {
        if (c.exitCode === null && c.signalCode === null) killGroup(c, 'SIGKILL');
        rmSync(home, { recursive: true, force: true });
      }
    });
  }
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
    if (stderr.length > 1_000_000) stderr = stderr.slice(-500_000);
  });
  child.stdin!.on('error', () => {}); // EPIPE after codex died: surfaced through 'exit'

  let nextId = 1;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void; method: string }>();
  const notifications: { method: string; params: any }[] = [];
  const listeners = new Set<(n: { method: string; params: any }) => void>();
  let approvals: ApprovalRecord[] = [];
  let exited: string | undefined;

  const send = (msg: unknown) => child.stdin!.write(JSON.stringify(msg) + '\n');

  const onServerRequest = (m: any) => {
    let answer: unknown;
    let error: { code: number; message: string } | undefined;
    switch (m.method) {
      case 'item/commandExecution/requestApproval':
      case 'item/fileChange/requestApproval':
        answer = { decision: o.approve ? o.approve(m.method, m.params) : 'accept' };
        break;
      case 'execCommandApproval': // v1 names
      case 'applyPatchApproval': {
        const d = o.approve ? o.approve(m.method, m.params) : 'accept';
        answer = { decision: d === 'accept' ? 'approved' : d === 'acceptForSession' ? 'approved_for_session' : d === 'decline' ? 'denied' : 'abort' };
        break;
      }
      case 'item/permissions/requestApproval':
        answer = { permissions: m.params?.permissions ?? {}, scope: 'turn' };
        break;
      case 'currentTime/read':
        answer = { currentTimeMs: Date.now() };
        break;
      default:
        error = { code: -32601, message: `test client does not handle ${m.method}` };
    }
    approvals.push({ method: m.method, params: m.params, answer: error ?? answer });
    send(error ? { id: m.id, error } : { id: m.id, result: answer });
  };

  let buf = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!line) continue;
      let m: any;
      try {
        m = JSON.parse(line);
      } catch {
        continue; // not ours to judge; codex logs go to stderr
      }
      if (m.method !== undefined && m.id !== undefined) onServerRequest(m);
      else if (m.method !== undefined) {
        const n = { method: m.method, params: m.params };
        notifications.push(n);
        for (const l of listeners) l(n);
      } else if (typeof m.id === 'number' && pending.has(m.id)) {
        const p = pending.get(m.id)!;
        pending.delete(m.id);
        if (m.error) p.reject(new Error(`${p.method} failed: ${JSON.stringify(m.error)}`));
        else p.resolve(m.result);
      }
    }
  });

  const exitedPromise = new Promise<void>((resolve) => {
    child.once('exit', (code, sig) => {
      exited = `codex app-server exited (code ${code}, signal ${sig}); stderr tail: ${stderr.slice(-2000)}`;
      for (const p of pending.values()) p.reject(new Error(exited));
      pending.clear();
      for (const l of listeners) l({ method: '__exit', params: exited });
      resolve();
    });
  });

  const request = (method: string, params: unknown, timeoutMs = 30_000): Promise<any> => {
    if (exited) return Promise.reject(new Error(exited));
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${method}: no answer from codex app-server in ${timeoutMs} ms; stderr tail: ${stderr.slice(-2000)}`));
      }, timeoutMs);
      pending.set(id, {
        method,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      send({ id, method, params });
    });
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return exitedPromise;
    stopped = true;
    if (!exited) {
      child.stdin!.end();
      killGroup(child, 'SIGTERM');
      const t = setTimeout(() => killGroup(child, 'SIGKILL'), 3000);
      await exitedPromise;
      clearTimeout(t);
    }
    killGroup(child, 'SIGKILL'); // any straggler left in the group
    live.delete(child);
    rmSync(codexHome, { recursive: true, force: true });
  };

  try {
    await request('initialize', { clientInfo: { name: 'exec-server-tests', title: null, version: '0.0.0' }, capabilities: { experimentalApi: true } });
    send({ method: 'initialized' });
  } catch (e) {
    await stop();
    throw e;
  }

  return {
    codexHome,
    notifications,
    request,
    stderr: () => stderr,
    stop,
    async startThread() {
      const r = await request('thread/start', {
        cwd: o.workspace,
        environments: [{ environmentId: o.environmentId ?? 'remote1', cwd: o.workspace }],
      });
      return r.thread.id as string;
    },
    runTurn(threadId, text, timeoutMs = 60_000) {
      approvals = [];
      const items: any[] = [];
      return new Promise<TurnResult>((resolve, reject) => {
        let turnId: string | undefined;
        let done = false;
        const finish = (err: Error | undefined, result?: TurnResult) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          listeners.delete(listener);
          if (err) reject(err);
          else resolve(result!);
        };
        const timer = setTimeout(
          () => finish(new Error(`turn did not complete in ${timeoutMs} ms; items so far: ${JSON.stringify(items).slice(0, 4000)}; stderr tail: ${stderr.slice(-2000)}`)),
          timeoutMs,
        );
        const listener = (n: { method: string; params: any }) => {
          if (n.method === '__exit') return finish(new Error(String(n.params)));
          if (n.params?.threadId !== undefined && n.params.threadId !== threadId) return;
          if (n.method === 'item/completed') items.push(n.params.item);
          if (n.method === 'turn/completed' && (turnId === undefined || n.params.turn.id === turnId)) {
            const t = n.params.turn;
            finish(undefined, { turnId: t.id, status: t.status, error: t.error, items, approvals });
          }
        };
        listeners.add(listener);
        request('turn/start', { threadId, input: [{ type: 'text', text, text_elements: [] }] }).then(
          (r) => {
            turnId = r?.turn?.id;
          },
          (e) => finish(e),
        );
      });
    },
  };
}
