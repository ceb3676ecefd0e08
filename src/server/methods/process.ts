// process/* method table: decoding and the session-level operations behind them.
import fs from 'node:fs';
import os from 'node:os';
import { Messages, RpcError, invalidParams, invalidRequest, internalError } from '../../protocol/errors';
import type { EnvPolicy, ProcessStartResult } from '../../protocol/types';
import type { ConnectionContext } from '../context';
import { osMessage } from '../os-errors';
import * as P from '../params';
import { uriToPath } from '../paths';
import type { SpawnRequest } from '../process/child';
import { buildChildEnv } from '../process/env-policy';
import { nulByteError, sandboxError, spawnError } from '../process/spawn-error';
import { MAX_OUTPUT_WINDOW } from '../process/managed-process';
import { resolveExecutable } from '../process/spawn-pty';
import { decodeMetadata, decodeShellSnapshot } from '../process/start-options';
import { snapshotTarget } from '../process/shell-snapshot';
import { decodeEnforce, decodeManagedNetwork, decodeNetworkProxy } from '../network/launch-config';
import { FAIL_CLOSED_EXIT, NO_PROXY_TO_BRIDGE, networkMode } from '../network/start-mode';
import { attachProxy, HTTP_PROXY_KEYS, SOCKS_PROXY_KEYS, staticProxyEnv } from '../network/proxy-launch';
import { credentialMasking } from '../network/masking';
import type { Masking } from '../network/http-proxy';
import { CHANNEL_FD, RELAY_SOURCE } from '../network/relay-source';
import { transparentResolvConf, transparentSupport } from '../network/transparent';
import { policyQuestionsOf } from '../network/callback';
import type { NetworkProxyLaunch } from '../network/launch-config';
import type { ProxiedSandbox } from '../sandbox/bwrap';
import { sandboxBackend } from '../sandbox/backend';
import type { GuardLease, Planted } from '../sandbox/plant-guard';
import { parseSandbox } from '../sandbox/profile';
import type { Access } from '../ordering';
import { spec as methodSpec, type MethodSpec, type MethodTable, type ProcessMethod } from './spec';

/** Upper bound of a process/read long-poll, whatever the client asks. */
export const MAX_WAIT_MS = 5 * 60_000;
const MAX_PTY_DIM = 10_000;

function decodeEnvPolicy(o: P.Obj | undefined): EnvPolicy | undefined {
  if (!o) return undefined;
  return {
    inherit: P.optVariant(o, 'inherit', ['core', 'all', 'none'] as const) ?? 'all',
    ignoreDefaultExcludes: P.optBool(o, 'ignoreDefaultExcludes') ?? false,
    exclude: P.optStrArray(o, 'exclude') ?? [],
    set: P.optStrRecord(o, 'set') ?? {},
    includeOnly: P.optStrArray(o, 'includeOnly') ?? [],
  };
}

function ptyDim(o: P.Obj, k: string): number | undefined {
  const v = P.optUint(o, k);
  if (v !== undefined && (v < 1 || v > MAX_PTY_DIM)) throw invalidParams(`${k} must be between 1 and ${MAX_PTY_DIM}`);
  return v;
}

/** The helper of transparent TCP; networkMode refused the start already where there is none. */
function transparentHelperOrThrow(): string {
  const s = transparentSupport();
  if (!s.ok) throw new Error(s.reason);
  return s.helper;
}

/** How the sandbox starts this launch's relay (../sandbox/bwrap.ts PROXIED_SCRIPT). */
function proxiedSandbox(launch: NetworkProxyLaunch): ProxiedSandbox {
  return {
    node: process.execPath,
    relaySource: RELAY_SOURCE,
    httpKeys: HTTP_PROXY_KEYS,
    socksKeys: SOCKS_PROXY_KEYS,
    socksScheme: launch.proxy.enableSocks5 ? 'socks5h' : 'http',
    ...(launch.proxy.transparentTcp ? { resolvConf: transparentResolvConf() } : {}),
  };
}

/**
 * Managed-proxy mode with no proxy to reach (./network/start-mode.ts): as on the reference the
 * start is answered, the command never runs, and the process reports the reference's message,
 * exit 101 and sandboxDenied. What runs is a fixed script with no client input at all.
 */
async function failClosed(
  ctx: ConnectionContext,
  p: { processId: string; tty: boolean; pipeStdin: boolean; rows: number; cols: number; sandbox: { kind: string }; outputWindow: number },
): Promise<ProcessStartResult> {
  // A managed profile still needs a usable sandbox host (-32600 otherwise), as any managed start.
  const backend = p.sandbox.kind === 'managed' ? await sandboxBackend(ctx.sandboxPidNamespace) : undefined;
  const proc = ctx.session().reserve(p.processId, p.outputWindow);
  const script = 'printf "%s\\n" "$1" >&2; exit "$2"';
  const req: SpawnRequest = {
    argv: ['/bin/sh', '-c', script, 'exec-server', NO_PROXY_TO_BRIDGE, String(FAIL_CLOSED_EXIT)],
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
    pipeStdin: p.pipeStdin,
    rows: p.rows,
    cols: p.cols,
  };
  try {
    await proc.start(req, p.tty, 'denied');
  } catch (e) {
    ctx.session().release(proc);
    proc.dispose();
    throw spawnError(e);
  }
  return { processId: p.processId, sandboxType: backend?.sandboxType ?? 'linuxSeccomp' };
}

/** What a sandbox planted, for its own error output, the agent and the log. */
function plantedText(planted: readonly Planted[]): string {
  const list = planted.map((x) => (x.movedTo ? `${x.path} (moved to ${x.movedTo})` : `${x.path} (could not be moved)`)).join(', ');
  return `the sandboxed command was stopped: it created ${list}; code in a .git, .vscode or *.code-workspace runs outside the sandbox when git or the editor opens it, so a sandbox may not create one (run it without the sandbox, after approval, if it must)`;
}

/**
 * A process method. Requests on one process id run in arrival order (a pipelined start +
 * write behaves as on the reference); process/read is "free" so a long-poll never holds
 * up a write to the same process.
 */
function spec<T extends string | { processId: string }, R>(
  decode: (raw: unknown) => T,
  handle: (ctx: ConnectionContext, p: T) => R | Promise<R>,
  access: Access = 'write',
): MethodSpec<R> {
  return methodSpec('exec', decode, handle, (p) => ({ key: `process:${typeof p === 'string' ? p : p.processId}`, access }));
}

const processIdOnly = (name: string) => (raw: unknown) => P.id(P.object(raw, name), 'processId');

export const processMethods: MethodTable<ProcessMethod> = {
  'process/start': spec(
    (raw) => {
      const o = P.object(raw, 'ExecParams');
      const processId = P.id(o, 'processId');
      const argv = P.strArray(o, 'argv');
      const cwdUri = P.str(o, 'cwd');
      const env = P.strRecord(o, 'env');
      const tty = P.bool(o, 'tty');
      const pipeStdin = P.optBool(o, 'pipeStdin') ?? false;
      const arg0 = P.optStr(o, 'arg0');
      const envPolicy = decodeEnvPolicy(P.optObject(o, 'envPolicy', 'ExecEnvPolicy'));
      const rows = ptyDim(o, 'rows') ?? 24;
      const cols = ptyDim(o, 'cols') ?? 80;
      const outputWindow = P.optUint(o, 'outputWindow') ?? 0;
      if (outputWindow > MAX_OUTPUT_WINDOW) throw invalidParams(`outputWindow must be at most ${MAX_OUTPUT_WINDOW} bytes`);
      if (argv.length === 0) throw invalidParams(Messages.emptyArgv);
      const cwd = uriToPath(cwdUri);
      const childEnv = buildChildEnv(env, envPolicy);
      // Decoded here so a malformed sandbox is a -32602 before anything else, as on the reference.
      const sandbox = parseSandbox(o.sandbox, { cwd, tmpDir: childEnv.TMPDIR || os.tmpdir(), homeDir: childEnv.HOME });
      decodeMetadata(o.metadata);
      const shellSnapshot = decodeShellSnapshot(o.shellSnapshot);
      const enforce = decodeEnforce(o);
      const managedNetwork = decodeManagedNetwork(o.managedNetwork);
      const networkProxy = decodeNetworkProxy(o.networkProxy);
      // Refused here (-32600) when it asks for a network policy this engine does not enforce.
      const network = networkMode({ sandbox, enforce, managedNetwork, networkProxy, env: childEnv, tty });
      // A shell the reference has no snapshot for: -32602 (only when the argv is that shell's login shell).
      const snapshot = snapshotTarget(argv, shellSnapshot);
      return { processId, argv, cwd, childEnv, env, envPolicy, tty, pipeStdin, arg0, rows, cols, sandbox, sandboxParam: o.sandbox, outputWindow, network, shellSnapshot, snapshot };
    },
    async (ctx, p): Promise<ProcessStartResult> => {
      const session = ctx.session();
      if (p.network.kind === 'failClosed') return failClosed(ctx, p);
      let req: SpawnRequest = { argv: p.argv, cwd: p.cwd, env: p.childEnv, arg0: p.arg0, pipeStdin: p.pipeStdin, rows: p.rows, cols: p.cols };
      // Refused before the id is taken: no usable sandbox → -32600, never an unconfined run.
      const backend = p.sandbox.kind === 'managed' ? await sandboxBackend(ctx.sandboxPidNamespace).catch((e) => Promise.reject(sandboxError(e, 'sandboxUnavailable'))) : undefined;
      const proc = session.reserve(p.processId, p.outputWindow); // synchronous: a concurrent duplicate fails here
      let lease: GuardLease | undefined;
      let masking: Masking | undefined;
      try {
        const nul = nulByteError(p.argv, p.arg0, p.childEnv);
        if (nul) throw nul;
        if (p.snapshot?.kind === 'unsupported') ctx.log('info', `process ${p.processId}: no shell snapshot for ${p.shellSnapshot?.shell.name} here; running the login shell`);
        if (p.snapshot?.kind === 'snapshot' && p.shellSnapshot) {
          // Captured under the same sandbox as the command (never shared with another profile).
          const restored = await session.shellSnapshots.prepare({
            req: p.shellSnapshot,
            shell: p.snapshot.shell,
            spawn: req,
            requestEnvKeys: Object.keys(p.env),
            envPolicy: p.envPolicy,
            sandboxParam: p.sandboxParam,
            sandbox: backend && p.sandbox.kind === 'managed' ? { backend, profile: p.sandbox } : undefined,
            log: (level, message) => ctx.log(level, `process ${p.processId}: ${message}`),
          });
          if (restored) req = restored;
        }
        if (backend && p.sandbox.kind === 'managed') {
          // What an unsandboxed spawn reports as a spawn error is checked first, on the host
          // (same files: the sandbox sees the host's paths); inside, bwrap would only print it.
          const st = await fs.promises.stat(p.cwd);
          if (!st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: ${p.cwd}`), { code: 'ENOTDIR' });
          resolveExecutable(p.argv[0], p.cwd, p.childEnv);
          try {
            // Watching starts before the spawn: nothing the sandbox creates goes unseen.
            const sandbox = p.sandbox;
            lease = backend.guard(sandbox, (planted) => {
              const why = plantedText(planted);
              ctx.log('warn', `process ${p.processId}: stopped: ${why}`);
              proc.stopForViolation(why);
            });
            if (!lease.complete) ctx.log('warn', `process ${p.processId}: the sandbox's writable roots are not fully watched for planted .git/.vscode (${lease.reason})`);
            if (p.network.kind === 'proxy') {
              // --linux-sandbox-transparent-tcp: every proxied start is transparent (checked at startup).
              const launch = ctx.sandboxTransparentTcp ? { ...p.network.launch, proxy: { ...p.network.launch.proxy, transparentTcp: true } } : p.network.launch;
              req = { ...req, env: { ...req.env, ...staticProxyEnv(launch) } };
              if (launch.proxy.credentialMasking) {
                const m = await credentialMasking(req.env, p.argv, launch.proxy.credentialProviders, (level, message) => ctx.log(level, `process ${p.processId}: ${message}`));
                masking = m.masking;
                req = { ...req, env: m.env };
              }
              req = backend.wrap(p.sandbox, req, proxiedSandbox(launch));
              req.channel = {
                fd: CHANNEL_FD,
                onChannel: (channel) => {
                  const served = attachProxy(channel, {
                    processId: p.processId,
                    launch,
                    masking,
                    notify: (params) => session.notify('network/policyDecision', params),
                    ask: (processId, request, timeoutMs, signal) => policyQuestionsOf(session).ask({ processId, request }, timeoutMs, signal),
                    log: (level, message) => ctx.log(level, message),
                    transparentHelper: launch.proxy.transparentTcp ? transparentHelperOrThrow() : undefined,
                  });
                  // The listeners live in the sandbox's namespace and keep it alive: they go with the process.
                  void proc.whenClosed.then(() => served.close());
                },
              };
            } else {
              req = backend.wrap(p.sandbox, req);
            }
          } catch (e) {
            throw sandboxError(e, 'sandboxPreparation');
          }
        }
        await proc.start(req, p.tty, backend !== undefined);
      } catch (e) {
        lease?.release();
        masking?.ca.dispose();
        session.release(proc);
        proc.dispose();
        throw spawnError(e);
      }
      if (masking) {
        const ca = masking.ca;
        void proc.whenClosed.then(() => ca.dispose());
      }
      if (lease) {
        const held = lease;
        // The last look once nothing of the sandbox is left (a lost inotify event).
        void proc.whenClosed.then(() => {
          const late = held.release();
          if (late.length > 0) ctx.log('warn', `process ${p.processId}: after it closed: ${plantedText(late)}`);
        });
      }
      return { processId: p.processId, sandboxType: backend ? backend.sandboxType : 'none' };
    },
  ),
  'process/read': spec(
    (raw) => {
      const o = P.object(raw, 'ReadParams');
      return {
        processId: P.id(o, 'processId'),
        afterSeq: P.optUint(o, 'afterSeq'),
        maxBytes: P.optUint(o, 'maxBytes'),
        waitMs: P.optUint(o, 'waitMs'),
      };
    },
    async (ctx, p) => {
      const proc = ctx.session().requireProcess(p.processId);
      const wait = Math.min(p.waitMs ?? 0, MAX_WAIT_MS);
      if (wait > 0 && !proc.hasNews(p.afterSeq)) await proc.waitForEvent(wait, ctx.closedSignal);
      return proc.read(p.afterSeq, p.maxBytes);
    },
    'free',
  ),
  'process/write': spec(
    (raw) => {
      const o = P.object(raw, 'WriteParams');
      const processId = P.id(o, 'processId');
      const chunk = P.str(o, 'chunk');
      const writeId = P.id(o, 'writeId');
      if (writeId.length === 0) throw invalidParams('writeId must not be empty');
      let data: Buffer;
      try {
        data = P.base64(chunk, 'chunk');
      } catch (e) {
        // Reference message: just "Invalid symbol 33, offset 0."
        throw invalidParams((e as Error).message.replace(/^chunk: /, ''));
      }
      return { processId, data, writeId };
    },
    (ctx, p) => {
      const proc = ctx.session().get(p.processId);
      if (!proc || proc.disposed) return { status: 'unknownProcess' };
      return { status: proc.write(p.data, p.writeId) };
    },
  ),
  'process/signal': spec(
    (raw) => {
      const o = P.object(raw, 'SignalParams');
      return { processId: P.id(o, 'processId'), signal: P.variant(o, 'signal', ['interrupt'] as const) };
    },
    (ctx, p) => {
      ctx.session().get(p.processId)?.interrupt();
      return {};
    },
  ),
  'process/terminate': spec(processIdOnly('TerminateParams'), (ctx, id) => ({
    running: ctx.session().get(id)?.terminate() ?? false,
  })),
  'process/resize': spec(
    (raw) => {
      const o = P.object(raw, 'ResizeParams');
      const processId = P.id(o, 'processId');
      P.uint(o, 'rows');
      P.uint(o, 'cols');
      return { processId, rows: ptyDim(o, 'rows')!, cols: ptyDim(o, 'cols')! };
    },
    (ctx, p) => {
      const proc = ctx.session().requireProcess(p.processId);
      if (proc.starting) throw invalidRequest(`process ${p.processId} is still starting`);
      if (!proc.isPty) throw invalidRequest(`process ${p.processId} is not a tty process`);
      proc.resize(p.rows, p.cols);
      return {};
    },
  ),
  // [extension flowControl] The client consumed this much output in total: reopens the window.
  // "free": an ack never waits behind a write to the same process.
  'process/ack': spec(
    (raw) => {
      const o = P.object(raw, 'AckParams');
      return { processId: P.id(o, 'processId'), consumedBytes: P.uint(o, 'consumedBytes') };
    },
    (ctx, p) => {
      ctx.session().requireProcess(p.processId).ack(p.consumedBytes);
      return {};
    },
    'free',
  ),
  'process/closeStdin': spec(processIdOnly('CloseStdinParams'), (ctx, id) => {
    const proc = ctx.session().requireProcess(id);
    if (proc.starting) throw invalidRequest(`process ${id} is still starting`);
    proc.closeStdin();
    return {};
  }),
};
