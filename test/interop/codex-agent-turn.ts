// A real Codex agent turn through an exec-server: the unmodified `codex app-server` (reference
// package) with a stand-in model (test/support/codex/mock-model.ts) whose scripted turn calls
// `exec_command` (a marker command, a write inside the workspace, a write into the protected
// `.git`, a write outside every writable root) and `apply_patch`, with Codex's remote environment
// pointed — through a recording websocket proxy — at the reference `codex exec-server` and at our
// CLI, in Codex's default mode, read-only, workspace-write and danger-full-access.
// The proxy proves each command ran through `process/start` on the exec-server, shows the sandbox
// object Codex sent and the `process/exited` (`sandboxDenied`) the server answered; the files on
// disk show what the sandbox let through; the mock model shows what Codex reported back.
// For each mode, a last test compares our outcome with the reference's field by field.
// The suites are registered by the codex-agent*.test.ts files, one mode each (a turn takes
// ~15-30 s and the runner gives a file 120 s).
// Requires `npm run build` (dist/cli.js) and the reference package (scripts/install-reference.sh).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { startCodexAppServer, type SandboxMode } from '../support/codex/codex-app-server';
import { startMockModel } from '../support/codex/mock-model';
import { startWsRecorder, type RecordedCall, type WsRecorder } from '../support/codex/ws-recorder';
import { cliPath, isReference, ourServer, pinnedReferenceVersion, referenceBinary, referenceEnv, referenceServer, referenceServerOf, referenceVersions, startWsServer, type ServerCommand } from '../support/reference';

if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` before the interop tests`);

const cacheDir = process.env.EXEC_SERVER_CACHE ?? path.join(os.homedir(), '.cache', 'exec-server');
const modeName = (m: SandboxMode | undefined) => m ?? 'default';

/** What one agent turn did, with run-specific paths replaced by <ws> / <outside>: compared across servers. */
interface Outcome {
  marker: CommandOutcome;
  inside: CommandOutcome & { file: string | null };
  protectedGit: CommandOutcome & { file: string | null };
  outside: CommandOutcome & { file: string | null };
  /** The inside / outside writes again, from a command on a PTY (exec_command tty: true). */
  ptyInside: CommandOutcome & { file: string | null };
  ptyOutside: CommandOutcome & { file: string | null };
  /** A write through a symlink in the workspace that points outside it. */
  viaLink: CommandOutcome & { file: string | null };
  /** A TCP connection to a listener on the host's 127.0.0.1 (network: restricted). */
  network: CommandOutcome & { connections: number };
  /** fs/writeFile calls for the patched file: the sandbox kind each carried and the server's error code. */
  patch: { writeFiles: WriteOutcome[]; file: string | null; modelOutputOk: boolean };
  /** apply_patch adding a file through the symlink that points outside the workspace (workspace-write, danger-full-access). */
  escapePatch: { writeFiles: WriteOutcome[]; file: string | null; modelSaw: string };
  approvals: string[];
  turnStatus: string;
}
interface WriteOutcome {
  sandbox: string;
  followSymlinks?: unknown;
  error: { code: number; message: string } | null;
}
interface CommandOutcome {
  /** process/start calls Codex sent for the command, and the first one's sandbox: 'managed' | 'none'. */
  starts: number;
  sandbox: string;
  /** The server's answer to that process/start. */
  startError: number | null;
  sandboxType: unknown;
  /** process/exited as the server sent it. */
  exitCode: unknown;
  sandboxDenied: unknown;
  /** What Codex told the model (function_call_output), abridged. */
  modelSaw: string;
}

/** The model's view of a command result, reduced to what must match across servers. */
function modelSummary(out: string | undefined): string {
  if (out === undefined) return '<no tool output>';
  const code = /Process exited with code (\d+)/.exec(out)?.[1];
  if (code !== undefined) {
    const denied = /Read-only file system|Permission denied|Operation not permitted|Network is unreachable|Connection refused/.test(out);
    return `exit ${code}${denied ? ' (denied)' : ''}`;
  }
  return out.slice(0, 200);
}

function commandOutcome(rec: WsRecorder, cmd: string, modelOut: string | undefined): { o: CommandOutcome; call?: RecordedCall } {
  const starts = rec.calls('process/start').filter((c) => Array.isArray(c.params?.argv) && c.params.argv[c.params.argv.length - 1] === cmd);
  const call = starts[0];
  const exited = call?.result ? rec.notifications('process/exited').find((n) => n.processId === call.result.processId) : undefined;
  return {
    call,
    o: {
      starts: starts.length,
      sandbox: call === undefined ? 'absent' : call.params.sandbox === null ? 'none' : String(call.params.sandbox?.permissions?.type),
      startError: call?.error?.code ?? null,
      sandboxType: call?.result?.sandboxType ?? null,
      exitCode: exited?.exitCode ?? null,
      sandboxDenied: exited?.sandboxDenied ?? null,
      modelSaw: modelSummary(modelOut),
    },
  };
}

function writeOutcomes(rec: WsRecorder, file: string): { calls: RecordedCall[]; o: WriteOutcome[] } {
  const calls = rec.calls('fs/writeFile').filter((c) => c.params?.path === pathToFileURL(file).href);
  return {
    calls,
    o: calls.map((c) => ({
      sandbox: c.params.sandbox === null ? 'none' : String(c.params.sandbox?.permissions?.type),
      ...('followSymlinks' in c.params ? { followSymlinks: c.params.followSymlinks } : {}),
      error: c.error ? { code: c.error.code, message: c.error.message } : null,
    })),
  };
}

const readIf = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8') : null);

const ROOT_READ = { path: { type: 'special', value: { kind: 'root' } }, access: 'read' };
const protectedEntry = (subpath: string) => ({ path: { type: 'special', value: { kind: 'project_roots', subpath } }, access: 'read', missing_path_behavior: 'skip' });
/** The file_system entries Codex 0.169 sends for a process/start in each mode (null: no sandbox). */
function expectedEntries(mode: SandboxMode | undefined): unknown[] | null {
  if (mode === 'danger-full-access') return null;
  if (mode === 'workspace-write') {
    return [
      ROOT_READ,
      { path: { type: 'special', value: { kind: 'project_roots' } }, access: 'write' },
      { path: { type: 'special', value: { kind: 'slash_tmp' } }, access: 'write' },
      { path: { type: 'special', value: { kind: 'tmpdir' } }, access: 'write' },
      protectedEntry('.git'), protectedEntry('.agents'), protectedEntry('.codex'), protectedEntry('.aws'),
    ];
  }
  return [ROOT_READ]; // read-only, and Codex's default
}

/** Runs one scripted agent turn against `server` in `mode`; asserts what must hold on any server. */
async function agentTurn(server: ServerCommand, mode: SandboxMode | undefined, outcomes: Map<string, Outcome>, codexVersion = pinnedReferenceVersion()): Promise<void> {
  const base = path.join(cacheDir, `codex-agent-${randomBytes(4).toString('hex')}`);
  // Not under /tmp or TMPDIR: those are writable roots under workspace-write.
  assert.ok(!base.startsWith('/tmp/') && !base.startsWith(os.tmpdir() + '/'), `test dir ${base} must not be under a temp dir`);
  const ws = path.join(base, 'work');
  const outside = path.join(base, 'outside');
  mkdirSync(path.join(ws, '.git'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  symlinkSync(outside, path.join(ws, 'link'));

  const marker = `marker-${randomBytes(4).toString('hex')}`;
  const cmds = {
    marker: `echo ${marker}; pwd`,
    inside: `printf inside > ${ws}/inside.txt`,
    protectedGit: `printf git > ${ws}/.git/written.txt`,
    outside: `printf outside > ${outside}/outside.txt`,
    ptyInside: `printf pty > ${ws}/pty.txt`,
    ptyOutside: `printf pty > ${outside}/pty.txt`,
    viaLink: `printf link > ${ws}/link/via-link.txt`,
    network: '', // set once the listener has a port
  };
  const patch = `*** Begin Patch\n*** Add File: ${ws}/patched.txt\n+hello from apply_patch\n*** End Patch\n`;
  const escapePatch = `*** Begin Patch\n*** Add File: ${ws}/link/escape.txt\n+escaped\n*** End Patch\n`;
  const ttyCmds = new Set(['ptyInside', 'ptyOutside']);
  const ids = { marker: 'c_marker', inside: 'c_inside', protectedGit: 'c_git', outside: 'c_outside', ptyInside: 'c_pty_in', ptyOutside: 'c_pty_out',
    viaLink: 'c_link', network: 'c_net',
    patch: 'c_patch', escapePatch: 'c_escape' };

  if (isReference(server)) {
    // The reference exec-server links its sandbox helper into its CODEX_HOME and refuses to under
    // /tmp: every sandboxed command would fail with "bwrap: execvp codex-linux-sandbox".
    const home = referenceEnv(server.version).CODEX_HOME ?? '';
    assert.ok(!home.startsWith('/tmp/'), `the reference's CODEX_HOME ${home} is under /tmp (set EXEC_SERVER_CACHE elsewhere)`);
  }
  const token = randomBytes(16).toString('hex');
  const tokenSha = createHash('sha256').update(token).digest('hex');
  const cleanups: (() => Promise<void>)[] = [];
  try {
    // A host TCP listener: a sandbox with network "restricted" must not reach it.
    let connections = 0;
    const listener = createServer((sock) => {
      connections++;
      sock.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    cleanups.unshift(() => new Promise((resolve) => listener.close(() => resolve())));
    cmds.network = `exec 3<>/dev/tcp/127.0.0.1/${(listener.address() as AddressInfo).port} && echo connected`;

    const srv = await startWsServer(server, ['--ws-auth', 'capability-token', '--ws-token-sha256', tokenSha]);
    cleanups.unshift(() => srv.stop());
    const rec = await startWsRecorder(srv.url);
    cleanups.unshift(() => rec.stop());
    const model = await startMockModel({
      script: [
        { exec_command: cmds.marker, callId: ids.marker },
        { exec_command: cmds.inside, callId: ids.inside },
        { exec_command: cmds.protectedGit, callId: ids.protectedGit },
        { exec_command: cmds.outside, callId: ids.outside },
        { exec_command: cmds.ptyInside, callId: ids.ptyInside, extra: { tty: true } },
        { exec_command: cmds.ptyOutside, callId: ids.ptyOutside, extra: { tty: true } },
        { exec_command: cmds.viaLink, callId: ids.viaLink },
        { exec_command: cmds.network, callId: ids.network },
        { apply_patch: patch, callId: ids.patch },
        // Read-only/default are left out: there Codex asks first, and the approved write carries an
        // explicit write grant on the file's directory — the link itself, i.e. the outside
        // directory — so both servers rightly write there; nothing to tell apart.
        ...(mode === 'workspace-write' || mode === 'danger-full-access' ? [{ apply_patch: escapePatch, callId: ids.escapePatch }] : []),
      ],
      finalText: 'all done',
    });
    cleanups.unshift(() => model.stop());
    const codex = await startCodexAppServer({
      codexBinary: referenceBinary(codexVersion),
      modelBaseUrl: model.baseUrl,
      execServerUrl: rec.url,
      token,
      workspace: ws,
      sandboxMode: mode,
    });
    cleanups.unshift(() => codex.stop());

    const threadId = await codex.startThread();
    const turn = await codex.runTurn(threadId, 'run the scripted steps', 90_000);
    const outputs = model.toolOutputs();
    const out = (id: string) => outputs.get(id)?.output;

    const marked = commandOutcome(rec, cmds.marker, out(ids.marker));
    const writes = writeOutcomes(rec, path.join(ws, 'patched.txt'));
    const writeCall = writes.calls[0];
    const escapeWrites = writeOutcomes(rec, path.join(ws, 'link', 'escape.txt'));
    const o: Outcome = {
      marker: marked.o,
      inside: { ...commandOutcome(rec, cmds.inside, out(ids.inside)).o, file: readIf(path.join(ws, 'inside.txt')) },
      protectedGit: { ...commandOutcome(rec, cmds.protectedGit, out(ids.protectedGit)).o, file: readIf(path.join(ws, '.git/written.txt')) },
      outside: { ...commandOutcome(rec, cmds.outside, out(ids.outside)).o, file: readIf(path.join(outside, 'outside.txt')) },
      ptyInside: { ...commandOutcome(rec, cmds.ptyInside, out(ids.ptyInside)).o, file: readIf(path.join(ws, 'pty.txt')) },
      ptyOutside: { ...commandOutcome(rec, cmds.ptyOutside, out(ids.ptyOutside)).o, file: readIf(path.join(outside, 'pty.txt')) },
      viaLink: { ...commandOutcome(rec, cmds.viaLink, out(ids.viaLink)).o, file: readIf(path.join(outside, 'via-link.txt')) },
      network: { ...commandOutcome(rec, cmds.network, out(ids.network)).o, connections },
      patch: {
        writeFiles: writes.o,
        file: readIf(path.join(ws, 'patched.txt')),
        modelOutputOk: /Success\. Updated the following files/.test(out(ids.patch) ?? ''),
      },
      escapePatch: { writeFiles: escapeWrites.o, file: readIf(path.join(outside, 'escape.txt')), modelSaw: (out(ids.escapePatch) ?? '<no tool output>').split('\n')[0] },
      approvals: turn.approvals.map((a) => a.method),
      turnStatus: turn.status,
    };
    outcomes.set(`${modeName(mode)}/${server.name}`, o);
    const ctx = `[${server.name}, ${modeName(mode)}, codex ${codexVersion}]`;
    const dump = () => JSON.stringify(o, null, 1);
    if (process.env.CODEX_AGENT_TEST_DUMP) console.log(`${ctx} outcome ${JSON.stringify(o)}\n${ctx} approvals ${JSON.stringify(turn.approvals)}`);

    // Sanity of the harness itself: the whole script was played, and Codex reached this server with the token.
    assert.equal(turn.status, 'completed', `${ctx} turn status: ${JSON.stringify(turn.error)}`);
    assert.equal(model.remaining(), 0, `${ctx} the model's script was not used up`);
    assert.equal(rec.authorizations[0], `Bearer ${token}`, `${ctx} Codex did not present the environments.toml token`);
    assert.ok(rec.calls('initialize').length >= 1, `${ctx} Codex never initialized a session on the exec-server`);

    // 1. Every command ran through process/start on the exec-server, with the sandbox of the mode.
    const entries = expectedEntries(mode);
    for (const [name, c] of Object.entries(cmds)) {
      const { call } = commandOutcome(rec, c, undefined);
      assert.ok(call, `${ctx} no process/start for the ${name} command`);
      assert.equal(commandOutcome(rec, c, undefined).o.starts, 1, `${ctx} process/start calls for ${name}`);
      assert.deepEqual(call.params.argv, ['/bin/bash', '-lc', c], `${ctx} argv of ${name}`);
      assert.equal(call.params.cwd, pathToFileURL(ws).href, `${ctx} cwd of ${name}`);
      assert.equal(call.params.tty, ttyCmds.has(name), `${ctx} tty of ${name}`);
      if (entries === null) {
        assert.equal(call.params.sandbox, null, `${ctx} danger-full-access must send sandbox: null`);
      } else {
        assert.equal(call.params.sandbox?.permissions?.type, 'managed', `${ctx} sandbox type`);
        assert.deepEqual(call.params.sandbox.permissions.file_system.entries, entries, `${ctx} sandbox entries`);
        assert.equal(call.params.sandbox.permissions.network, 'restricted', `${ctx} network`);
        assert.deepEqual(call.params.sandbox.workspaceRoots, [pathToFileURL(ws).href], `${ctx} workspaceRoots`);
      }
      assert.equal(call.error, undefined,
        `${ctx} the exec-server rejected process/start of ${name} (${JSON.stringify(call.error)}); the reference runs it under bubblewrap`);
      assert.equal(call.result?.sandboxType, entries === null ? 'none' : 'linuxSeccomp', `${ctx} sandboxType of ${name}`);
    }
    // The marker command's output reached the model.
    assert.equal(o.marker.exitCode, 0, `${ctx} marker command exit: ${dump()}`);
    assert.equal(o.marker.sandboxDenied, false, `${ctx} marker sandboxDenied`);
    assert.match(out(ids.marker) ?? '', new RegExp(`Process exited with code 0[\\s\\S]*${marker}\\n${ws.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
      `${ctx} function_call_output of the marker command`);

    // 2. Writes: the sandbox decides, the server reports denials with sandboxDenied: true.
    const denied = (c: CommandOutcome & { file: string | null }, what: string) => {
      assert.equal(c.file, null, `${ctx} ${what}: the file was written despite the sandbox`);
      assert.notEqual(c.exitCode, 0, `${ctx} ${what}: exit code`);
      assert.equal(c.sandboxDenied, true, `${ctx} ${what}: process/exited must carry sandboxDenied: true: ${dump()}`);
      assert.equal(c.modelSaw, 'exit 1 (denied)', `${ctx} ${what}: what the model was told`);
    };
    const allowed = (c: CommandOutcome & { file: string | null }, what: string, content: string) => {
      assert.equal(c.exitCode, 0, `${ctx} ${what}: exit code: ${dump()}`);
      assert.equal(c.sandboxDenied, false, `${ctx} ${what}: sandboxDenied`);
      assert.equal(c.file, content, `${ctx} ${what}: file content`);
      assert.equal(c.modelSaw, 'exit 0', `${ctx} ${what}: what the model was told`);
    };
    if (mode === 'danger-full-access') {
      allowed(o.inside, 'write inside the workspace', 'inside');
      allowed(o.protectedGit, 'write into .git', 'git');
      allowed(o.outside, 'write outside the workspace', 'outside');
      allowed(o.viaLink, 'write through a symlink to outside', 'link');
      allowed(o.ptyInside, 'PTY: write inside the workspace', 'pty');
      allowed(o.ptyOutside, 'PTY: write outside the workspace', 'pty');
    } else if (mode === 'workspace-write') {
      allowed(o.inside, 'write inside the workspace', 'inside');
      denied(o.protectedGit, 'write into the protected .git');
      denied(o.outside, 'write outside every writable root');
      denied(o.viaLink, 'write through a workspace symlink to outside every writable root');
      allowed(o.ptyInside, 'PTY: write inside the workspace', 'pty');
      denied(o.ptyOutside, 'PTY: write outside every writable root');
    } else {
      denied(o.inside, 'write inside the workspace (read-only)');
      denied(o.protectedGit, 'write into .git (read-only)');
      denied(o.outside, 'write outside every writable root');
      denied(o.viaLink, 'write through a workspace symlink to outside');
      denied(o.ptyInside, 'PTY: write inside the workspace (read-only)');
      denied(o.ptyOutside, 'PTY: write outside every writable root');
    }
    // network: "restricted" — the sandboxed command cannot reach a listener on the host's loopback.
    if (mode === 'danger-full-access') {
      assert.equal(o.network.connections, 1, `${ctx} unsandboxed command did not reach the host listener: ${dump()}`);
      assert.equal(o.network.exitCode, 0, `${ctx} network command exit`);
    } else {
      assert.equal(o.network.connections, 0, `${ctx} a sandboxed command (network: restricted) connected to the host's 127.0.0.1`);
      assert.notEqual(o.network.exitCode, 0, `${ctx} network command exit: ${dump()}`);
      assert.equal(o.network.sandboxDenied, true, `${ctx} blocked connection: process/exited must carry sandboxDenied: true like the reference's: ${JSON.stringify(o.network)}`);
    }

    // 3. apply_patch writes through fs/writeFile on the exec-server (read-only/default: after the
    // user approved the change, with an explicit write entry for the patched file's directory).
    assert.ok(writeCall, `${ctx} apply_patch did not call fs/writeFile on the exec-server`);
    assert.equal(writes.calls.length, 1, `${ctx} fs/writeFile calls for the patch: ${JSON.stringify(o.patch.writeFiles)}`);
    assert.equal(Buffer.from(writeCall.params.dataBase64, 'base64').toString(), 'hello from apply_patch\n', `${ctx} fs/writeFile data`);
    if (mode === 'danger-full-access') {
      assert.equal(writeCall.params.sandbox, null, `${ctx} fs/writeFile sandbox`);
    } else {
      assert.equal(writeCall.params.sandbox?.permissions?.type, 'managed', `${ctx} fs/writeFile sandbox`);
      const wsWrite = mode === 'workspace-write'
        ? { path: { type: 'special', value: { kind: 'project_roots' } }, access: 'write' }
        : { path: { type: 'path', path: pathToFileURL(ws).href }, access: 'write' };
      assert.deepEqual(writeCall.params.sandbox.permissions.file_system.entries.slice(0, 2), [ROOT_READ, wsWrite], `${ctx} fs/writeFile sandbox entries`);
    }
    assert.equal(writeCall.error, undefined, `${ctx} the exec-server rejected apply_patch's fs/writeFile (${JSON.stringify(writeCall.error)}); the reference writes it`);
    assert.equal(o.patch.file, 'hello from apply_patch\n', `${ctx} patched file content`);
    assert.ok(o.patch.modelOutputOk, `${ctx} apply_patch output to the model: ${out(ids.patch)}`);

    // apply_patch adding a file through a workspace symlink that points outside.
    if (mode === 'danger-full-access') {
      assert.equal(o.escapePatch.file, 'escaped\n', `${ctx} unsandboxed apply_patch through the link: ${dump()}`);
    } else if (mode === 'workspace-write') {
      // Codex's sandboxed write must be refused; Codex then asks the user, and the approved retry
      // comes with sandbox: null and followSymlinks: false — which must not follow the link either.
      assert.equal(o.escapePatch.file, null, `${ctx} apply_patch wrote outside the workspace through a symlink: ${JSON.stringify(o.escapePatch)}`);
      const [first, retry] = escapeWrites.calls;
      assert.ok(first, `${ctx} no fs/writeFile for the escaping patch`);
      assert.equal(first.params.sandbox?.permissions?.type, 'managed', `${ctx} escaping patch: first write's sandbox`);
      assert.ok(first.error, `${ctx} the exec-server let a sandboxed fs/writeFile through a symlink to outside every writable root`);
      assert.deepEqual(first.error && { code: first.error.code, message: first.error.message }, { code: -32603, message: 'Read-only file system (os error 30)' },
        `${ctx} sandbox denial of fs/writeFile: the reference's error shape`);
      assert.ok(retry, `${ctx} Codex did not retry the escaping patch after approval: ${JSON.stringify(o.escapePatch)}`);
      assert.equal(retry.params.sandbox, null, `${ctx} approved retry sandbox`);
      assert.equal(retry.params.followSymlinks, false, `${ctx} approved retry followSymlinks`);
      assert.ok(retry.error, `${ctx} fs/writeFile with followSymlinks: false wrote through a symlinked directory (the reference answers "Not a directory")`);
      assert.equal(escapeWrites.calls.length, 2, `${ctx} fs/writeFile calls for the escaping patch`);
      assert.match(o.escapePatch.modelSaw, /^Exit code: 1/, `${ctx} escaping patch: what the model was told`);
    }

    // 4. Approvals: Codex asks before a patch only when the sandbox would not allow it (read-only,
    // default), or when the sandbox refused it.
    // workspace-write: only the escaping patch, after the sandbox refused it ("retry without sandbox?").
    const expectApprovals = mode === 'danger-full-access' ? [] : ['item/fileChange/requestApproval'];
    assert.deepEqual(o.approvals, expectApprovals, `${ctx} approval requests`);
  } finally {
    for (const c of cleanups) await c().catch(() => {});
    rmSync(base, { recursive: true, force: true });
  }
}

function compareOutcomes(outcomes: Map<string, Outcome>, mode: SandboxMode | undefined, refName: string): void {
  const ref = outcomes.get(`${modeName(mode)}/${refName}`);
  const ours = outcomes.get(`${modeName(mode)}/ours`);
  assert.ok(ref && ours, 'both turns must have run');
  const diffs = (Object.keys(ref) as (keyof Outcome)[])
    .filter((k) => JSON.stringify(ref[k]) !== JSON.stringify(ours[k]))
    .map((k) => `${k}: reference ${JSON.stringify(ref[k])}\n${' '.repeat(k.length)}  ours      ${JSON.stringify(ours[k])}`);
  assert.equal(diffs.length, 0, `ours differs from ${refName} (${modeName(mode)} mode):\n${diffs.join('\n')}`);
}

/** One suite per mode: the turn through the pinned reference and through ours, then the comparison. */
export function describeModeTurns(modes: readonly (SandboxMode | undefined)[]): void {
  for (const mode of modes) {
    describe(`codex agent turn, ${modeName(mode)} mode`, { timeout: 240_000 }, () => {
      const outcomes = new Map<string, Outcome>();
      for (const server of [referenceServer, ourServer] as ServerCommand[]) {
        test(`through ${server.name}`, () => agentTurn(server, mode, outcomes));
      }
      test('ours has the same outcome as the reference', () => compareOutcomes(outcomes, mode, referenceServer.name));
    });
  }
}

// The newer references: the Codex client and exec-server of that version, in the one mode that
// exercises every sandbox outcome (allowed and denied writes, the network, the escaping patch and
// its approved retry). Agent turns are the suite's expensive part (~30 s each); the cheap
// conformance scenarios run against every version in interop.test.ts and wire-compat.test.ts.
export function describeNewerVersionTurns(): void {
  for (const version of referenceVersions().slice(1)) {
    const mode: SandboxMode = 'workspace-write';
    describe(`codex ${version} agent turn, ${mode} mode`, { timeout: 240_000 }, () => {
      const outcomes = new Map<string, Outcome>();
      const reference = referenceServerOf(version);
      for (const server of [reference, ourServer]) {
        test(`through ${server.name}`, () => agentTurn(server, mode, outcomes, version));
      }
      test(`ours has the same outcome as ${reference.name}`, () => compareOutcomes(outcomes, mode, reference.name));
    });
}
}
