// Terminal and process tests, registered once per environment (Local and the remote CLI server).
// Terminal output is read through files the typed commands write, so the tests do not depend on
// how the Pseudoterminal renders; the input still goes through the real workbench terminal.
import path from 'node:path';
import * as vscode from 'vscode';
import { test } from './framework';
import { assert, assertEqual, freshDir, productApi, waitFor, waitForFile } from './util';
import { descendants, isAlive } from '../../support/process';

const opened = new Set<vscode.Terminal>();

export async function newTerminal(environment: string, cwd: string, name: string): Promise<vscode.Terminal> {
  const terminal = await vscode.commands.executeCommand<vscode.Terminal | undefined>('execServer.newTerminal', {
    environment,
    cwd,
    name,
  });
  assert(terminal && typeof terminal.sendText === 'function', `execServer.newTerminal returned a Terminal (got ${String(terminal)})`);
  opened.add(terminal);
  terminal.show(false);
  return terminal;
}

export function disposeTerminals(): void {
  for (const t of opened) t.dispose();
  opened.clear();
  // Run Command terminals stay open after exit until a key is pressed: close them too.
  for (const t of vscode.window.terminals) if (t.name.startsWith('Run: ')) t.dispose();
}

function closed(terminal: vscode.Terminal, timeoutMs: number): Promise<vscode.Terminal> {
  return new Promise((resolve, reject) => {
    if (terminal.exitStatus) return resolve(terminal);
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`terminal "${terminal.name}" did not close within ${timeoutMs} ms`));
    }, timeoutMs);
    const sub = vscode.window.onDidCloseTerminal((t) => {
      if (t !== terminal) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(t);
    });
  });
}

function parseSize(text: string): { rows: number; cols: number } | undefined {
  const m = /^(\d+) (\d+)\s*$/.exec(text);
  return m ? { rows: Number(m[1]), cols: Number(m[2]) } : undefined;
}

/**
 * Registers the process + terminal tests for one environment. `env()` returns its name (after
 * setup); `serverPid()` the pid of the process that must be the parent of what it starts (the
 * extension host for Local, which runs in-process; the CLI server for the remote one).
 */
export function registerTerminalTests(label: string, env: () => string, serverPid: () => number | undefined): void {
  test(`${label}: run() returns exit code, stdout and stderr of a real process started by its server`, async () => {
    const api = await productApi();
    const r = await api.run(env(), ['/bin/sh', '-c', 'printf out-$((20+22)); printf "err-$PPID" >&2; exit 3']);
    assertEqual(r.exitCode, 3, 'exit code');
    assertEqual(r.stdout, 'out-42', 'stdout');
    assertEqual(r.stderr, `err-${serverPid()}`, 'stderr (holding the parent pid)');
  });

  test(`${label}: execServer.runCommand runs the command in cwd and returns its exit code`, async () => {
    const dir = freshDir(`${label}-runcmd`);
    const ok = await vscode.commands.executeCommand<{ exitCode: number }>('execServer.runCommand', {
      environment: env(),
      argv: ['/bin/sh', '-c', 'pwd > where.txt; exit 0'],
      cwd: dir,
    });
    assertEqual(ok?.exitCode, 0, 'exit code of a succeeding command');
    assertEqual((await waitForFile(path.join(dir, 'where.txt'))).trim(), dir, 'working directory of the command');
    const failed = await vscode.commands.executeCommand<{ exitCode: number }>('execServer.runCommand', {
      environment: env(),
      command: 'exit 5',
      cwd: dir,
    });
    assertEqual(failed?.exitCode, 5, 'exit code of `exit 5` given as a command line');
  });

  test(`${label}: a command typed into the terminal runs in a shell started by its server (output reaches a file)`, async () => {
    const dir = freshDir(`${label}-term`);
    const terminal = await newTerminal(env(), dir, `e2e ${label} typed`);
    terminal.sendText('echo $PPID > ppid.txt; echo "typed-$((6*7))" > typed.txt');
    const text = await waitForFile(path.join(dir, 'typed.txt'), (t) => t.endsWith('\n'), 30_000);
    assertEqual(text, 'typed-42\n', 'output of the typed command');
    assertEqual(Number(await waitForFile(path.join(dir, 'ppid.txt'))), serverPid(), 'the shell is a child of the environment\'s server');
    terminal.dispose();
  });

  test(`${label}: resizing the terminal panel reaches the PTY (stty size changes)`, async () => {
    const dir = freshDir(`${label}-resize`);
    const terminal = await newTerminal(env(), dir, `e2e ${label} resize`);
    terminal.sendText('stty size > before.txt');
    const before = parseSize(await waitForFile(path.join(dir, 'before.txt'), (t) => !!parseSize(t), 30_000))!;
    assert(before.rows > 0 && before.cols > 0, `initial PTY size is positive (${JSON.stringify(before)})`);
    // Maximizing the panel gives the terminal more rows; VS Code then calls setDimensions.
    await vscode.commands.executeCommand('workbench.action.toggleMaximizedPanel');
    try {
      let n = 0;
      const after = await waitFor('a different stty size after maximizing the panel', async () => {
        const file = path.join(dir, `after-${++n}.txt`);
        terminal.sendText(`stty size > ${path.basename(file)}`);
        const size = parseSize(await waitForFile(file, (t) => !!parseSize(t), 10_000));
        return size && size.rows !== before.rows ? size : undefined;
      }, 30_000, 500);
      assert(after.rows > before.rows, `more rows after maximizing (${before.rows} → ${after.rows})`);
    } finally {
      await vscode.commands.executeCommand('workbench.action.toggleMaximizedPanel');
      terminal.dispose();
    }
  });

  test(`${label}: Ctrl+C typed into the terminal interrupts the running command`, async () => {
    const dir = freshDir(`${label}-intr`);
    const terminal = await newTerminal(env(), dir, `e2e ${label} interrupt`);
    terminal.sendText('echo $$ > started.txt; sleep 120');
    const shell = Number(await waitForFile(path.join(dir, 'started.txt'), (t) => /^\d+\n$/.test(t), 30_000));
    // Ctrl+C once the command runs (a child of the shell), so it is the command that is interrupted.
    const sleeper = await waitFor('the shell to run sleep', () => descendants(shell).find((p) => p.comm === 'sleep')?.pid, 20_000, 50);
    terminal.sendText('\x03', false);
    // Only reachable in time if the sleep was interrupted.
    terminal.sendText('echo back > back.txt');
    assertEqual(await waitForFile(path.join(dir, 'back.txt'), (t) => t.endsWith('\n'), 30_000), 'back\n', 'command after Ctrl+C');
    assert(!isAlive(sleeper), `the interrupted sleep (pid ${sleeper}) is gone`);
    terminal.dispose();
  });

  test(`${label}: closing the terminal kills its shell and the command running in it`, async () => {
    const dir = freshDir(`${label}-kill`);
    const terminal = await newTerminal(env(), dir, `e2e ${label} kill`);
    terminal.sendText(`echo $$ > shell.txt; sh -c 'echo $$ > cmd.txt; exec sleep 300'`);
    const shell = Number(await waitForFile(path.join(dir, 'shell.txt'), (t) => t.endsWith('\n'), 30_000));
    const cmd = Number(await waitForFile(path.join(dir, 'cmd.txt'), (t) => t.endsWith('\n'), 30_000));
    assert(isAlive(shell) && isAlive(cmd), 'shell and command run before the terminal is closed');
    terminal.dispose();
    await waitFor('the shell and its command to end', () => !isAlive(shell) && !isAlive(cmd), 20_000);
  });

  test(`${label}: a shell that exits with 7 closes the terminal with exit code 7`, async () => {
    const dir = freshDir(`${label}-exit`);
    const terminal = await newTerminal(env(), dir, `e2e ${label} exit`);
    // Prove the shell is up first, so the exit comes from the typed command.
    terminal.sendText('echo ready > ready.txt');
    await waitForFile(path.join(dir, 'ready.txt'), (t) => t === 'ready\n', 30_000);
    const done = closed(terminal, 30_000);
    terminal.sendText('exit 7');
    const t = await done;
    assertEqual(t.exitStatus?.code, 7, 'terminal exit status code');
  });

  test(`${label}: API openTerminal runs a given argv in a terminal`, async () => {
    const dir = freshDir(`${label}-apiterm`);
    const api = await productApi();
    const terminal = await api.openTerminal(env(), {
      cwd: dir,
      argv: ['/bin/sh', '-c', 'echo "argv-$((1+1))" > argv.txt; exit 4'],
      name: `e2e ${label} argv`,
    });
    opened.add(terminal);
    const done = closed(terminal, 30_000);
    assertEqual(await waitForFile(path.join(dir, 'argv.txt'), (t) => t.endsWith('\n'), 30_000), 'argv-2\n', 'output of argv');
    const t = await done;
    assertEqual(t.exitStatus?.code, 4, 'exit code of argv');
  });
}
