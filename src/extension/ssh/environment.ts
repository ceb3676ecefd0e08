// The saved environment Connect to Host produces: a command environment whose command is the
// system ssh running the chosen executor with `--listen stdio://` (keep-alives on, BatchMode),
// so it shows in the tree and reconnects like any other command environment. Also the name
// it gets (the alias, or user-host-port; a taken name of another definition gets -2, -3, …).
// Free of `vscode`.
import type { AddEnvironmentInput, EnvironmentConfig } from '../environments';
import type { Executor } from './probe';
import { environmentNameFor, sshArgv, type SshOptions, type SshTarget } from './target';

export function sshEnvironmentInput(name: string, t: SshTarget, ssh: SshOptions, executor: Executor): AddEnvironmentInput {
  // Saved with BatchMode=yes (no askpass): whoever runs the command without a helper gets an
  // error instead of a question nobody sees; Connect to Host's own spawns turn it off (./persist.ts).
  return { name, command: ssh.sshPath || 'ssh', args: sshArgv(t, { sshPath: ssh.sshPath, configFile: ssh.configFile }, executor.remoteCommand, { keepAlive: true }) };
}

const same = (a: EnvironmentConfig, b: AddEnvironmentInput) => a.kind === 'command' && a.command === b.command && JSON.stringify(a.args ?? []) === JSON.stringify(b.args ?? []);
/** The same ssh destination and options; only the remote command (the executor) differs. */
const sameHost = (a: EnvironmentConfig, b: AddEnvironmentInput) =>
  a.kind === 'command' && a.command === b.command && JSON.stringify((a.args ?? []).slice(0, -1)) === JSON.stringify((b.args ?? []).slice(0, -1));

/**
 * The name to save `input` under: its own when free or when that entry is this very
 * definition (then nothing needs saving: `existing` true) or the same host with another
 * executor (it is updated), else the first free `name-N`.
 */
export function chooseEnvironmentName(t: SshTarget, input: Omit<AddEnvironmentInput, 'name'>, list: EnvironmentConfig[], wanted?: string): { name: string; existing: boolean } {
  const base = wanted ?? environmentNameFor(t);
  const full = { ...input, name: base };
  for (let i = 1; i < 100; i++) {
    const name = i === 1 ? base : `${base.slice(0, 60)}-${i}`;
    const e = list.find((x) => x.name.toLowerCase() === name.toLowerCase());
    if (!e) return { name, existing: false };
    if (same(e, { ...full, name })) return { name: e.name, existing: true };
    if (sameHost(e, { ...full, name })) return { name: e.name, existing: false };
  }
  throw new Error(`no free environment name for ${base}`);
}
