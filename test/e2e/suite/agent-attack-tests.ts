// Two agent attacks played against the real workbench (docs/security.md, "Managed sandbox" and
// "Agent endpoint: threat model"), each where only the workbench shows whether it worked:
//   1. An unasked sandboxed command (default policy, writable root inside the workspace) plants
//      code that git runs: `core.fsmonitor` in an existing nested repository's `.git/config` and
//      in the top-level one, a `post-index-change` hook (git status may write the index), and a
//      NEW repository (`git init`) with such a config; then a second command plants one through
//      Codex's /tmp write in a folder of the workspace outside its project root (this workspace
//      lies under /tmp, as a clone in /tmp does). VS Code's own Git extension is the victim:
//      it opens repositories that appear in the workspace by itself and runs `git status` on
//      them, outside the sandbox. The marker the hooks would write lies outside the sandbox.
//   2. A question padded with 700 spaces before the dangerous part: the toast must still show,
//      on screen, that the command runs unsandboxed and sets LD_PRELOAD, and the run as a count.
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';
import * as vscode from 'vscode';
import { AgentClient } from './agent-client';
import { agentEndpoint, homeLikeDir, insideDir } from './agent-security-tests';
import { answerApprovalIfShown, defaultApprovalPolicy, findNotice, inspectApproval, setApprovalPolicyForTest } from './approval';
import { onTestEnd, test } from './framework';
import { assert, freshDir, uniqueName, waitFor } from './util';

const uri = (p: string) => pathToFileURL(p).href;

/** The part of VS Code's Git extension API (extensions/git/src/api/git.d.ts) the test reads. */
interface GitRepository {
  readonly rootUri: vscode.Uri;
  readonly state: { readonly workingTreeChanges: readonly { uri: vscode.Uri }[]; readonly untrackedChanges?: readonly { uri: vscode.Uri }[] };
  status(): Promise<void>;
}
interface GitApi {
  readonly git: { readonly path: string };
  readonly repositories: readonly GitRepository[];
  openRepository(root: vscode.Uri): Promise<GitRepository | null>;
}

/** The builtin Git extension, active, and the git it found (on the extension host's PATH). */
async function gitExtension(): Promise<GitApi> {
  const ext = vscode.extensions.getExtension<{ getAPI(v: 1): GitApi; enabled: boolean }>('vscode.git');
  assert(ext, 'VS Code\'s builtin Git extension (vscode.git) is installed');
  const exp = await ext.activate();
  assert(exp.enabled, 'the Git extension is enabled (git.enabled)');
  const api = exp.getAPI(1);
  assert(api.git.path, 'the Git extension found git');
  return api;
}

const repoAt = (api: GitApi, root: string) => api.repositories.find((r) => r.rootUri.fsPath === root);
const changed = (r: GitRepository | undefined, file: string) =>
  !!r && [...r.state.workingTreeChanges, ...(r.state.untrackedChanges ?? [])].some((c) => c.uri.fsPath === file);

function git(cwd: string, ...args: string[]): void {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8' });
  assert(r.status === 0, `git ${args.join(' ')} in ${cwd}: ${r.stderr}`);
}

/**
 * Codex's workspace-write sandbox without its own `.git` entries (what stays read-only is the
 * engine's doing); `tmp`: with its /tmp and $TMPDIR writes (this workspace lies under /tmp).
 */
function writeOnly(root: string, tmp = false): unknown {
  const special = (kind: string) => ({ type: 'special', value: { kind } });
  const entries = [{ path: special('root'), access: 'read' }, { path: special('project_roots'), access: 'write' }];
  if (tmp) entries.push({ path: special('slash_tmp'), access: 'write' }, { path: special('tmpdir'), access: 'write' });
  return {
    permissions: { type: 'managed', file_system: { type: 'restricted', entries }, network: 'restricted' },
    cwd: uri(root),
    workspaceRoots: [uri(root)],
    windowsSandboxLevel: 'disabled',
    windowsSandboxProxySettingsMode: 'reconcile',
    useLegacyLandlock: false,
  };
}

export function registerAgentAttackTests(): void {
  test('agent attack: .git planted by an unasked sandboxed command (fsmonitor in a nested and the top repo, a hook, a new git init) — VS Code\'s Git extension opens and runs status, and no planted code runs outside the sandbox', async () => {
    await setApprovalPolicyForTest(defaultApprovalPolicy());
    const api = await gitExtension();
    // <ws>/<project>: the agent's project (the sandbox's writable root), no repository itself;
    // app/ a repository, app/nested/ one inside it, both opened by the Git extension.
    const project = realpathSync(insideDir('atk-git'));
    const control = realpathSync(insideDir('atk-git-ctl'));
    const sibling = realpathSync(insideDir('atk-git-sib'));
    onTestEnd(() => {
      rmSync(project, { recursive: true, force: true });
      rmSync(control, { recursive: true, force: true });
      rmSync(sibling, { recursive: true, force: true });
    });
    const app = path.join(project, 'app');
    const nested = path.join(app, 'nested');
    mkdirSync(nested, { recursive: true });
    git(app, 'init', '-q');
    git(nested, 'init', '-q');
    writeFileSync(path.join(app, 'README'), 'app\n');
    writeFileSync(path.join(nested, 'README'), 'nested\n');
    // A folder of the project that is no repository (yet): a new `.git` in it reaches the Git
    // extension's watcher as such (the watcher already watches the folder).
    const fresh = path.join(project, 'lib');
    mkdirSync(fresh);
    writeFileSync(path.join(fresh, 'index.js'), '\n');
    const outside = homeLikeDir('atk-git-out');
    const marker = (tag: string) => path.join(outside, `PWNED-${tag}`);
    await vscode.commands.executeCommand('workbench.view.scm');
    // Opened as "Git: Open Repository" does (the Git extension opens a nested repository by
    // itself only at the window's start: its watcher skips a repository inside an open one).
    for (const r of [app, nested]) {
      await api.openRepository(vscode.Uri.file(r));
      await waitFor(`the Git extension to open ${path.relative(project, r)}/`, () => repoAt(api, r), 30_000, 100);
    }

    const m = uniqueName('plant');
    const config = (tag: string) => `printf '[core]\\n\\tfsmonitor = "touch ${marker(tag)}"\\n'`;
    const script = [
      'set +e',
      `${config('nested')} >> app/nested/.git/config && echo ${m}-wrote-nested-config`,
      `printf '#!/bin/sh\\ntouch ${marker('hook')}\\n' > app/nested/.git/hooks/post-index-change && chmod +x app/nested/.git/hooks/post-index-change && echo ${m}-wrote-hook`,
      `${config('top')} >> app/.git/config && echo ${m}-wrote-top-config`,
      `git init -q lib && ${config('fresh')} >> lib/.git/config && echo ${m}-planted-fresh`,
      'sleep 10',
      `echo ${m}-survived`,
    ];
    const { url, token } = await agentEndpoint();
    const c = await AgentClient.connect(url, token);
    onTestEnd(() => c.terminate());
    const run = async (id: string, lines: string[], sandbox: unknown) => {
      const start = c.settle('process/start', {
        processId: id, argv: ['/bin/bash', '-c', lines.join('\n')], cwd: uri(project), env: { PATH: '/usr/bin:/bin', HOME: outside },
        tty: false, pipeStdin: false, arg0: null, sandbox,
      });
      // Unasked is the premise (a question would be a Deny here, and the attack would prove nothing).
      const [s, asked] = await Promise.all([start, answerApprovalIfShown('Deny', { contains: id, giveUpMs: 3_000 })]);
      assert(!asked.clicked, `the sandboxed command ran without a question (it asked: ${asked.text})`);
      assert(s.ok, `process/start: ${s.ok ? '' : s.error.message}`);
      const exitCode = await c.waitForExit(id, 30_000);
      const exited = c.notifications.find((n) => n.method === 'process/exited' && n.params?.processId === id)?.params;
      const output = c.notifications
        .filter((n) => n.method === 'process/output' && n.params?.processId === id)
        .map((n) => Buffer.from(String(n.params.chunk), 'base64').toString())
        .join('');
      return { exitCode, exited, output };
    };
    const { exitCode, exited, output } = await run(m, script, writeOnly(project));
    // The same through Codex's /tmp write, into a folder of the workspace outside the project
    // root (this workspace lies under /tmp, the temp dir the sandbox may write).
    const viaTmp = await run(`${m}-tmp`, [`git init -q ${sibling} && ${config('tmp')} >> ${sibling}/.git/config && echo ${m}-planted-tmp`, 'sleep 10', `echo ${m}-survived`], writeOnly(project, true));

    // The Git extension looks after the plants: its refresh (the SCM view's, git.refresh) runs
    // status on app/ and app/nested/ (which then lists a file written after the command ended;
    // by itself it refreshes only while the window has focus), and its watcher has gone past
    // the new repository (it opened one made after the command ended, by itself).
    const after = `${m}-after.txt`;
    writeFileSync(path.join(app, after), 'x\n');
    writeFileSync(path.join(nested, after), 'x\n');
    git(control, 'init', '-q');
    writeFileSync(path.join(control, after), 'x\n');
    await waitFor('the Git extension to open a repository made after the command, by itself', () => repoAt(api, control), 30_000, 100);
    await Promise.all(api.repositories.filter((r) => r.rootUri.fsPath.startsWith(project + path.sep)).map((r) => r.status()));
    assert(changed(repoAt(api, app), path.join(app, after)) && changed(repoAt(api, nested), path.join(nested, after)), 'the Git extension ran status on app/ and app/nested/ after the command');
    const notice = await findNotice({ contains: m, giveUpMs: 10_000 });

    const problems: string[] = [];
    const check = (ok: unknown, what: string) => ok || problems.push(what);
    const ran = readdirSync(outside);
    check(ran.length === 0, `no planted code ran outside the sandbox (${outside} has ${ran.join(', ')})`);
    check(!repoAt(api, fresh), 'the Git extension never opened the new repository lib/');
    check(!/fsmonitor/.test(readFileSync(path.join(nested, '.git', 'config'), 'utf8')), 'app/nested/.git/config has no fsmonitor');
    check(!/fsmonitor/.test(readFileSync(path.join(app, '.git', 'config'), 'utf8')), 'app/.git/config has no fsmonitor');
    check(!existsSync(path.join(nested, '.git', 'hooks', 'post-index-change')), 'no hook in app/nested/.git/hooks');
    check(!existsSync(path.join(fresh, '.git')), 'lib/.git is gone');
    check(existsSync(path.join(fresh, '.git.exec-server-quarantine')), 'lib/.git was moved to lib/.git.exec-server-quarantine');
    check(!/-wrote-|-survived/.test(output), `no write into an existing .git went through, and the command did not live on (output: ${output})`);
    check(output.includes('the sandboxed command was stopped: it created') && output.includes(path.join(fresh, '.git')), `its stderr says it was stopped for lib/.git (output: ${output})`);
    check(exitCode !== 0 && exited?.sandboxDenied === true, `the exit reports sandboxDenied (exit ${exitCode}, ${JSON.stringify(exited)})`);
    check(notice.found, `a notification names the blocked command (${notice.error})`);
    check(!repoAt(api, sibling) && !existsSync(path.join(sibling, '.git')), 'the repository planted through /tmp is gone and was never opened');
    check(!viaTmp.output.includes('-survived') && viaTmp.exited?.sandboxDenied === true, `the command planting through /tmp was stopped (exit ${viaTmp.exitCode}, ${JSON.stringify(viaTmp.exited)}, output: ${viaTmp.output})`);
    assert(problems.length === 0, `the plant worked:\n  - ${problems.join('\n  - ')}`);
  }, 90_000);

  test('agent attack: a question padded with 700 spaces before the payload shows on screen that it runs unsandboxed and sets LD_PRELOAD, and the run as a count', async () => {
    await setApprovalPolicyForTest(defaultApprovalPolicy());
    const dir = freshDir('atk-pad');
    const m = uniqueName('pad');
    const { url, token } = await agentEndpoint();
    const c = await AgentClient.connect(url, token);
    onTestEnd(() => c.terminate());
    const start = c.settle('process/start', {
      processId: m, argv: ['/bin/sh', '-c', `echo ${m}${' '.repeat(700)}; touch ${m}-ran`], cwd: uri(dir),
      env: { PATH: '/usr/bin:/bin', LD_PRELOAD: path.join(dir, 'evil.so') }, tty: false, pipeStdin: false, arg0: null,
    });
    const seen = await inspectApproval({ contains: m, toastOnly: true, giveUpMs: 20_000 });
    const denied = await answerApprovalIfShown('Deny', { contains: m, giveUpMs: 20_000 });
    const s = await start;
    assert(seen.found && seen.kind === 'toast', `the question showed as a toast (${seen.error})`);
    const shown = seen.visibleText ?? '';
    const problems: string[] = [];
    const check = (ok: unknown, what: string) => ok || problems.push(what);
    check(shown.includes('unsandboxed'), '"unsandboxed" is on screen');
    check(/sets [^)]*LD_PRELOAD/.test(shown), '"sets … LD_PRELOAD" is on screen');
    check(shown.includes('⟨700 spaces⟩'), 'the padding is on screen as "⟨700 spaces⟩"');
    check(!/ {8}/.test(seen.text ?? ''), 'no run of spaces is in the text');
    check(denied.clicked && !s.ok && !existsSync(path.join(dir, `${m}-ran`)), `Deny refused it (clicked: ${denied.clicked}, start ${s.ok ? 'succeeded' : 'failed'})`);
    assert(problems.length === 0, `${problems.join('; ')}\n  on screen: ${JSON.stringify(shown)}\n  text: ${JSON.stringify(seen.text)}`);
  });
}
