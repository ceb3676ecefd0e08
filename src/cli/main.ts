// The standalone `exec-server` CLI (dist/cli.js, the package bin).
//   exec-server [--listen ws://IP:PORT | stdio:// | stdio]
// stdout carries only protocol (stdio) or the one line with the bound URL (websocket);
// logs go to stderr. SIGINT/SIGTERM shut down cleanly (children are killed).
// First: the C heap's settings hold only for threads that start after them (./heap-first.ts).
import './heap-first';
import { transparentSupport } from '../server/network/transparent';
import { setListenerErrorHandler } from '../rpc/event';
import { ExecServer } from '../server/exec-server';
import { releaseStartHeap, startIdleCollector } from '../server/idle-gc';
import { serveConnection } from '../transports/serve';
import { DEFAULT_MAX_IN_FLIGHT } from '../server/in-flight';
import { StdioTransport } from '../transports/stdio';
import { listenWebSocket, type WebSocketListenOptions } from '../transports/websocket-server';
import { VERSION } from '../version';
import { loadTlsMaterial } from '../transports/tls';
import { createAuthenticator, SecurityConfigError } from '../transports/ws-auth';
import { SERVER_MESSAGES_PER_SLICE } from '../transports/ws-frame-reader';
import { parseAuthArgs, SECURITY_FLAGS_HELP, validateListenSecurity, type SecurityOptions } from '../transports/ws-auth-args';
import { rejectReason } from '../telemetry/api';
import { TELEMETRY_FLAGS_HELP, TelemetryConfigError, telemetryConfig, type TelemetryConfig, type TelemetryFlags } from '../telemetry/config';
import { startServerTelemetry } from '../telemetry/load';
import { closeInheritedDescriptors } from '../server/inherited-fds';
import { readFileSync } from 'node:fs';
import { DEFAULT_DETACHED_IDLE_EXIT_SEC, DEFAULT_DETACHED_SESSION_TTL_SEC, DEFAULT_SESSION_TTL_SEC, ensureDetachedServer, removeOwnRunRecord, watchRunRecord } from './detach';
import { proofResponder } from '../transports/detach-proof';
import { observeChildren } from '../server/process/child';
import { runSentinel, SENTINEL_FLAG, startSentinel } from './sentinel';
import { PID_NAMESPACE_MODES, type PidNamespaceMode } from '../server/sandbox/bwrap';

type Level = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Level[] = ['debug', 'info', 'warn', 'error'];

const HELP = `exec-server ${VERSION} — run processes and filesystem operations for a remote client
(JSON-RPC, wire-compatible with \`codex exec-server\`).

Usage: exec-server [options]

Options:
  --listen URL          ws://IP:PORT (default ws://127.0.0.1:0), stdio:// or stdio
  --max-in-flight N     concurrent requests per connection (default ${DEFAULT_MAX_IN_FLIGHT})
  --log-level LEVEL     debug|info|warn|error (default info; also EXEC_SERVER_LOG)
  --idle-exit SECONDS   websocket listener: exit after SECONDS with no connection and no
                        session (a detached session's processes end with its --session-ttl);
                        before the first connection at least 30 s
  --session-ttl SECONDS a session whose client went away keeps its processes this long for
                        the client to resume it (default ${DEFAULT_SESSION_TTL_SEC}; a server started by --detach:
                        ${DEFAULT_DETACHED_SESSION_TTL_SEC}, as a window reload on a loaded machine can take minutes)
  --detach              find this user's detached server of this version or start one
                        (127.0.0.1, random token, --idle-exit ${DEFAULT_DETACHED_IDLE_EXIT_SEC} and --session-ttl
                        ${DEFAULT_DETACHED_SESSION_TTL_SEC} unless given; recorded in
                        ~/.exec-server/run/<version>-<hostname>.json, 0600), print {"port","token","pid",…}
                        as one JSON line and exit. Connect to Host uses it over ssh.
  --run-record FILE     (set by --detach, with --ws-token-file) exit once FILE no longer
                        names this server, remove it on exit, prove the token on request
  --exit-on-stdin-close websocket listener: exit (code 0, children killed) once standard
                        input reaches its end (the parent holding its pipe closed it or died);
                        without the flag CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE=true|false sets it
  --linux-sandbox-pid-namespace MODE
                        a managed sandbox's pid namespace: isolate (default: its own, it sees
                        and signals only its processes) or inherit (the server's: it can signal
                        every process of this user; only for a dedicated environment)
  --linux-sandbox-transparent-tcp
                        route every proxied sandbox's TCP through its proxy's policy (as
                        networkProxy.proxy.transparentTcp does per start)
  -h, --help            show this help
  -V, --version         print the version
With a websocket listener the bound URL is printed as one line on stdout once it accepts
connections; GET /readyz on the same port answers 200.

${SECURITY_FLAGS_HELP}
${TELEMETRY_FLAGS_HELP}`;

export class UsageError extends Error {}

interface CliOptions {
  listen: string;
  maxInFlight: number;
  logLevel: Level;
  telemetry: TelemetryFlags;
  /** --idle-exit (seconds). */
  idleExitSec?: number;
  /** --session-ttl (seconds). */
  sessionTtlSec?: number;
  detach: boolean;
  /** --run-record (a server started by --detach). */
  runRecord?: string;
  /** --exit-on-stdin-close, or CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE=true when the flag is not given. */
  exitOnStdinClose: boolean;
  /** What set exitOnStdinClose (for the refusals' wording). */
  exitOnStdinCloseFrom?: string;
  /** --linux-sandbox-pid-namespace (undefined: not given, the engine's default `isolate`). */
  pidNamespace?: PidNamespaceMode;
  /** --linux-sandbox-transparent-tcp. */
  transparentTcp?: boolean;
}

/** Telemetry flags (src/telemetry/config.ts) → the TelemetryFlags field they set. */
const TELEMETRY_FLAGS: Record<string, keyof TelemetryFlags> = {
  '--otlp-endpoint': 'otlpEndpoint',
  '--otlp-protocol': 'otlpProtocol',
  '--service-name': 'serviceName',
  '--trace-sampler': 'sampler',
  '--trace-sampler-arg': 'samplerArg',
  '--prometheus': 'prometheus',
};

function parseArgs(argv: string[]): CliOptions | 'help' | 'version' {
  const o: CliOptions = {
    listen: 'ws://127.0.0.1:0',
    maxInFlight: DEFAULT_MAX_IN_FLIGHT,
    logLevel: (LEVELS as string[]).includes(process.env.EXEC_SERVER_LOG ?? '') ? (process.env.EXEC_SERVER_LOG as Level) : 'info',
    telemetry: {},
    detach: false,
    exitOnStdinClose: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    const value = (): string => {
      const v = eq > 0 ? a.slice(eq + 1) : argv[++i];
      if (v === undefined || v === '') throw new UsageError(`${name} requires a value`);
      return v;
    };
    switch (name) {
      case '-h':
      case '--help':
        return 'help';
      case '-V':
      case '--version':
        return 'version';
      case '--listen':
        o.listen = value();
        break;
      case '--max-in-flight': {
        const n = Number(value());
        if (!Number.isInteger(n) || n < 1) throw new UsageError('--max-in-flight must be a positive integer');
        o.maxInFlight = n;
        break;
      }
      case '--idle-exit': {
        const n = Number(value());
        if (!Number.isInteger(n) || n < 1 || n > 30 * 86_400) throw new UsageError('--idle-exit must be a whole number of seconds (1 to 2592000)');
        o.idleExitSec = n;
        break;
      }
      case '--session-ttl': {
        const n = Number(value());
        if (!Number.isInteger(n) || n < 1 || n > 7 * 86_400) throw new UsageError('--session-ttl must be a whole number of seconds (1 to 604800)');
        o.sessionTtlSec = n;
        break;
      }
      case '--detach':
        o.detach = true;
        break;
      case '--run-record':
        o.runRecord = value();
        break;
      case '--exit-on-stdin-close':
        if (eq > 0) throw new UsageError('--exit-on-stdin-close takes no value');
        o.exitOnStdinClose = true;
        o.exitOnStdinCloseFrom = '--exit-on-stdin-close';
        break;
      case '--linux-sandbox-transparent-tcp':
        if (eq > 0) throw new UsageError('--linux-sandbox-transparent-tcp takes no value');
        o.transparentTcp = true;
        break;
      case '--linux-sandbox-pid-namespace': {
        // As the reference: the exact lowercase names, given at most once.
        if (o.pidNamespace !== undefined) throw new UsageError('--linux-sandbox-pid-namespace can be given only once');
        const v = value();
        if (!(PID_NAMESPACE_MODES as readonly string[]).includes(v)) throw new UsageError(`invalid --linux-sandbox-pid-namespace ${JSON.stringify(v)}: expected ${PID_NAMESPACE_MODES.join(' or ')}`);
        o.pidNamespace = v as PidNamespaceMode;
        break;
      }
      case '--log-level': {
        const v = value();
        if (!(LEVELS as string[]).includes(v)) throw new UsageError(`--log-level must be one of ${LEVELS.join(', ')}`);
        o.logLevel = v as Level;
        break;
      }
      // Security flags (--ws-auth ..., --tls-cert/--tls-key, --allow-origin) were already
      // taken out by parseAuthArgs (src/transports/ws-auth-args.ts).
      default:
        if (Object.prototype.hasOwnProperty.call(TELEMETRY_FLAGS, name)) {
          o.telemetry[TELEMETRY_FLAGS[name]] = value();
          break;
        }
        throw new UsageError(`unknown argument: ${a}`);
    }
  }
  if (!o.exitOnStdinClose) o.exitOnStdinClose = exitOnStdinCloseFromEnv(process.env[EXIT_ON_STDIN_CLOSE_ENV]);
  if (o.exitOnStdinClose && !o.exitOnStdinCloseFrom) o.exitOnStdinCloseFrom = `${EXIT_ON_STDIN_CLOSE_ENV}=true`;
  return o;
}

/** The reference's environment form of --exit-on-stdin-close (clap's `env`). */
export const EXIT_ON_STDIN_CLOSE_ENV = 'CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE';

/**
 * As the reference reads it (measured on 0.169.0 and 0.171.0): only when the flag is not given
 * (then even a bad value is ignored), exactly `true` or `false`; anything else — `1`, `yes`,
 * `TRUE`, ` true`, empty — is refused with exit 2, in the reference's words plus the variable's name.
 */
function exitOnStdinCloseFromEnv(v: string | undefined): boolean {
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  if (v === '') throw new UsageError(`a value is required for '--exit-on-stdin-close' but none was supplied (${EXIT_ON_STDIN_CLOSE_ENV} is empty) [possible values: true, false]`);
  throw new UsageError(`invalid value '${v}' for '--exit-on-stdin-close' (from ${EXIT_ON_STDIN_CLOSE_ENV}) [possible values: true, false]`);
}

type Listen = { kind: 'stdio' } | { kind: 'ws'; host: string; port: number };

function parseListen(listen: string): Listen {
  if (listen === 'stdio' || listen === 'stdio://' || listen === '-') return { kind: 'stdio' };
  let url: URL;
  try {
    url = new URL(listen);
  } catch {
    throw new UsageError(`invalid --listen value ${JSON.stringify(listen)}: expected ws://IP:PORT, stdio:// or stdio`);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new UsageError(`unsupported --listen scheme ${url.protocol} (expected ws://, wss:// or stdio://)`);
  if (url.pathname !== '/' && url.pathname !== '') throw new UsageError(`--listen ${listen}: a path is not supported`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!url.port) throw new UsageError(`--listen ${listen}: a port is required (use :0 for any free port)`);
  return { kind: 'ws', host: host === 'localhost' ? '127.0.0.1' : host, port: Number(url.port) };
}

export async function main(argv: string[]): Promise<number> {
  let opts: ReturnType<typeof parseArgs>;
  let listen: Listen;
  let security: SecurityOptions;
  let wsSecurity: Pick<WebSocketListenOptions, 'authenticate' | 'allowedOrigins' | 'tls'>;
  /** --run-record's server: its capability token, for the proof --detach asks before trusting it. */
  let detachedToken: string | undefined;
  let telemetryOptions: TelemetryConfig;
  // Hidden: started by a detached server only (./sentinel.ts).
  if (argv[0] === SENTINEL_FLAG) return runSentinel(argv.slice(1));
  try {
    // Security flags (ws-auth-args.ts) are taken out first; the rest is parsed below.
    const parsedSecurity = parseAuthArgs(argv);
    security = parsedSecurity.options;
    opts = parseArgs(parsedSecurity.rest);
    if (opts === 'help') {
      process.stdout.write(HELP);
      return 0;
    }
    if (opts === 'version') {
      process.stdout.write(`exec-server ${VERSION}\n`);
      return 0;
    }
    if (opts.transparentTcp) {
      // Asked for every proxied start: never a server that would run them without it.
      const t = transparentSupport();
      if (!t.ok) throw new UsageError(`--linux-sandbox-transparent-tcp: ${t.reason}`);
    }
    if (opts.detach) {
      // A detached server is found by its version alone: it would be handed to a caller that asked for another pid namespace.
      if (opts.transparentTcp) throw new UsageError('--linux-sandbox-transparent-tcp cannot be used with --detach');
      if (opts.exitOnStdinClose || opts.pidNamespace !== undefined) throw new UsageError(`${opts.exitOnStdinClose ? opts.exitOnStdinCloseFrom : '--linux-sandbox-pid-namespace'}: --exit-on-stdin-close and --linux-sandbox-pid-namespace cannot be used with --detach`);
      try {
        const answer = await ensureDetachedServer({ idleExitSec: opts.idleExitSec, sessionTtlSec: opts.sessionTtlSec });
        // The token goes to stdout only (the caller's pipe), never to stderr or a log.
        process.stdout.write(JSON.stringify(answer) + '\n');
        process.stderr.write(`exec-server: detached server pid ${answer.pid} on 127.0.0.1:${answer.port} (${answer.started ? 'started' : 'already running'})\n`);
        return 0;
      } catch (e) {
        process.stderr.write(`exec-server: --detach failed: ${e instanceof Error ? e.message : String(e)}\n`);
        return 1;
      }
    }
    listen = parseListen(opts.listen);
    if ((opts.idleExitSec !== undefined || opts.runRecord) && listen.kind !== 'ws') throw new UsageError('--idle-exit and --run-record need a websocket listener');
    // With stdio the end of input already ends the server (and the reference refuses the flag there too).
    if (opts.exitOnStdinClose && listen.kind !== 'ws') throw new UsageError(`${opts.exitOnStdinCloseFrom}: --exit-on-stdin-close needs a websocket listener (with --listen stdio the server exits at the end of its input anyway)`);
    telemetryOptions = telemetryConfig(process.env, opts.telemetry);
    // Non-loopback needs --ws-auth; wss:// needs a cert; reads and checks secrets now.
    validateListenSecurity(opts.listen, security);
    wsSecurity = {
      authenticate: security.auth ? createAuthenticator(security.auth) : undefined,
      allowedOrigins: security.allowedOrigins,
      tls: security.tls ? loadTlsMaterial(security.tls) : undefined,
    };
    if (opts.runRecord) {
      const auth = security.auth;
      if (auth?.mode !== 'capability-token' || !auth.tokenFile) throw new UsageError('--run-record needs --ws-auth capability-token --ws-token-file');
      // Read now: --detach deletes the file once the URL line is out. Trimmed as the authenticator does.
      detachedToken = readFileSync(auth.tokenFile, 'utf8').trim();
      if (!detachedToken) throw new UsageError('--run-record: the token file is empty');
    }
  } catch (e) {
    if (e instanceof UsageError || e instanceof SecurityConfigError || e instanceof TelemetryConfigError) {
      process.stderr.write(`exec-server: ${e.message}\nRun \`exec-server --help\` for usage.\n`);
      return 2;
    }
    throw e;
  }

  const minLevel = LEVELS.indexOf(opts.logLevel);
  const log = (level: Level, message: string) => {
    if (LEVELS.indexOf(level) >= minLevel) process.stderr.write(`${new Date().toISOString()} ${level.toUpperCase()} exec-server: ${message}\n`);
  };
  process.stdout.on('error', () => {}); // a closed stdout must not crash the server (EPIPE)
  // A descriptor a parent leaked into this process would reach every child (src/server/inherited-fds.ts).
  const closedFds = closeInheritedDescriptors();
  if (closedFds.length > 0) log('debug', `closed inherited descriptors ${closedFds.join(', ')} (not close-on-exec; children must not get them)`);

  // Off (the default): the no-op, and the OpenTelemetry SDK is never loaded.
  let telemetry: Awaited<ReturnType<typeof startServerTelemetry>>;
  try {
    telemetry = await startServerTelemetry(telemetryOptions, log, { diagnostics: true });
  } catch (e) {
    log('error', e instanceof Error ? e.message : String(e));
    return 1;
  }
  // The engine's own per-connection cap follows --max-in-flight too (it would otherwise stay at its own default).
  const server = new ExecServer({
    log,
    maxInFlightPerConnection: opts.maxInFlight,
    telemetry,
    detachedSessionTtlMs: (opts.sessionTtlSec ?? DEFAULT_SESSION_TTL_SEC) * 1000,
    linuxSandboxPidNamespace: opts.pidNamespace,
    linuxSandboxTransparentTcp: opts.transparentTcp,
  });
  if (opts.pidNamespace === 'inherit') log('warn', 'managed sandboxes share this server\'s pid namespace (--linux-sandbox-pid-namespace inherit): a sandboxed command can signal every process of this user');
  // A server of its own: memory held after a burst of work goes back once it idles (../server/idle-gc.ts).
  startIdleCollector();
  setListenerErrorHandler((e) => log('error', `an event listener threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));
  // Whatever ends this process (a fatal error, process.exit anywhere, an uncaught exception),
  // the children's process groups go with it: shutdown() sends SIGKILL synchronously, before its
  // first await, so calling it from 'exit' (where nothing async runs) still kills them.
  process.once('exit', () => void server.shutdown());
  // A record left behind names a port another user could take over: it goes with this process
  // (only a SIGKILL or a crash of node itself skips this; --detach verifies what it finds anyway).
  const runRecord = opts.runRecord;
  if (runRecord) process.once('exit', () => removeOwnRunRecord(runRecord));
  // Should this detached server die without its shutdown (SIGKILL, a crash), nothing would kill
  // its children: a sentinel does (./sentinel.ts). Told "bye" after the shutdown above killed them.
  const sentinel = runRecord ? startSentinel(runRecord, log) : undefined;
  if (sentinel) {
    observeChildren(sentinel.observer);
    process.once('exit', () => sentinel.bye());
  }
  process.on('uncaughtException', (e) => {
    log('error', `fatal: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  });
  let stopping: Promise<number> | undefined;
  let closeListener: () => Promise<void> = async () => {};
  const stop = (why: string, code = 0): Promise<number> => {
    stopping ??= (async () => {
      log('info', `shutting down (${why})`);
      // Before the listener closes: no --detach finds a record whose server is going away.
      if (runRecord) removeOwnRunRecord(runRecord);
      await closeListener().catch(() => {});
      await server.shutdown().catch((e: unknown) => log('error', `shutdown: ${String(e)}`));
      // Spans of the last requests and processes are exported before the process exits.
      await telemetry.shutdown().catch((e: unknown) => log('warn', `telemetry: ${String(e)}`));
      return code;
    })();
    return stopping;
  };

  let finish: (code: number) => void = () => {};
  /** When --detach last had this server prove its token: it is about to hand this server to a client. */
  let provenAt = 0;
  // --idle-exit: checked every second; any connection or session (attached or detached) resets
  // it. Until the first connection at least 30 s: --detach's caller connects in a second ssh login.
  // A proof to --detach resets it too: the server it vouched for is still there when the client
  // connects (through `ssh -W`), not gone with a port free for someone else to take.
  const exitWhenIdle = (ms: number) => {
    let idleSince = Date.now();
    let served = false;
    const timer = setInterval(() => {
      idleSince = Math.max(idleSince, provenAt);
      if (server.connectionCount > 0 || server.sessionCount > 0) {
        idleSince = Date.now();
        served = true;
      } else if (Date.now() - idleSince >= (served ? ms : Math.max(ms, 30_000))) {
        clearInterval(timer);
        void stop(`no connection and no session for ${ms / 1000} s (--idle-exit)`).then(finish);
      }
    }, Math.min(1000, ms));
  };
  const done = new Promise<number>((resolve) => {
    finish = resolve;
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(sig, () => void stop(sig).then(resolve));
    if (listen.kind === 'stdio') {
      const transport = new StdioTransport(process.stdin, process.stdout, { messagesPerTurn: SERVER_MESSAGES_PER_SLICE });
      const served = serveConnection(server, transport, { terminateOnClose: true, label: 'stdio', maxInFlight: opts.maxInFlight, log });
      void served.closed.then(() => stop('end of input').then(resolve));
      setImmediate(releaseStartHeap);
    }
  });

  if (listen.kind === 'ws') {
    const wsOptions: WebSocketListenOptions = {
      host: listen.host,
      port: listen.port,
      log,
      onReject: (status) => telemetry.connectionRejected(rejectReason(status)),
      onHttpRequest: detachedToken ? proofResponder(detachedToken, () => (provenAt = Date.now())) : undefined,
      sessionCount: () => server.sessionCount,
      onConnection: (transport, req) => {
        const label = `ws ${req.socket.remoteAddress}:${req.socket.remotePort}`;
        serveConnection(server, transport, { label, maxInFlight: opts.maxInFlight, log });
      },
      ...wsSecurity,
    };
    try {
      const listener = await listenWebSocket(wsOptions);
      closeListener = () => listener.close();
      process.stdout.write(`${listener.url}\n`);
      log('info', `listening on ${listener.url}`);
      // After the announcement, so that whoever waits for it does not wait for the collections too.
      setImmediate(releaseStartHeap);
      if (opts.idleExitSec !== undefined) exitWhenIdle(opts.idleExitSec * 1000);
      if (opts.exitOnStdinClose) {
        // Whatever comes on stdin is read and dropped; its end (the parent closed the pipe or
        // died; at once for /dev/null) stops the server as a signal does: exit code 0, as the reference.
        const ended = () => void stop('end of standard input (--exit-on-stdin-close)').then(finish);
        process.stdin.once('end', ended).once('close', ended).once('error', ended);
        process.stdin.resume();
      }
      if (opts.runRecord) {
        const record = opts.runRecord;
        watchRunRecord(record, (why) => void stop(`unreachable: ${why}`).then(finish), () => log('info', `run record ${record} names this server`));
      }
    } catch (e) {
      log('error', `cannot listen on ${opts.listen}: ${e instanceof Error ? e.message : String(e)}`);
      await server.shutdown().catch(() => {});
      await telemetry.shutdown().catch(() => {});
      return 1;
    }
  }
  return done;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`exec-server: fatal: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
