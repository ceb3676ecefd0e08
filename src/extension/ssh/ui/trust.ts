// The first login of Connect to Host, with trust on first use: ssh runs with strict host-key
// checking; a host whose key is not known yet has its keys fetched (src/extension/ssh/hostkey.ts), their
// SHA256 fingerprints shown in a modal, and only after "Trust and Connect" exactly those keys
// are recorded and the login retried — still strict. A host behind ProxyJump/ProxyCommand
// cannot be scanned beforehand: the question says so and ssh's accept-new records its key.
import * as vscode from 'vscode';
import { ProxiedHostError, recordHostKeys, scanHostKeys } from '../hostkey';
import { probeHost, type HostFacts } from '../probe';
import { formatSshTarget, SshError, type SshOptions, type SshTarget } from '../target';

export interface TrustOptions {
  log: vscode.LogOutputChannel;
  progress: vscode.Progress<{ message?: string }>;
  signal: AbortSignal;
  /** Ask the user before trusting (false: programmatic callers, who decide with `trust`). */
  ask: boolean;
  /** Trusting a new key is allowed at all. */
  trust: boolean;
}

const QUESTION = (shown: string) => `Exec Server: ${shown} is a host ssh has not seen before.`;

async function agreed(o: TrustOptions, shown: string, detail: string): Promise<void> {
  if (!o.ask) return;
  const ok = await vscode.window.showWarningMessage(QUESTION(shown), { modal: true, detail }, 'Trust and Connect');
  if (ok !== 'Trust and Connect') throw new vscode.CancellationError();
}

/** probeHost, asking to trust an unknown host key. Throws SshError / CancellationError. */
export async function probeTrustingNewHostKey(target: SshTarget, ssh: SshOptions, o: TrustOptions): Promise<HostFacts> {
  const shown = formatSshTarget(target);
  o.progress.report({ message: 'logging in over ssh…' });
  try {
    return await probeHost(target, ssh, { signal: o.signal });
  } catch (e) {
    if (e instanceof SshError) o.log.error(`Connect to Host: ${shown}: ${e.kind}: ${e.stderr.trim()}`);
    if (!(e instanceof SshError) || e.kind !== 'host-key-unknown' || !o.trust) throw e;
  }
  o.progress.report({ message: 'fetching the host key…' });
  let scan;
  try {
    scan = await scanHostKeys(target, ssh);
  } catch (x) {
    if (!(x instanceof ProxiedHostError)) throw x;
    await agreed(o, shown, `${x.message}, so its key cannot be shown beforehand. Trust the key it presents now? ssh records it (StrictHostKeyChecking=accept-new) and checks it on every later connection.`);
    return probeHost(target, ssh, { signal: o.signal, acceptNewHostKey: true });
  }
  const prints = scan.keys.map((k) => `${k.type} ${k.fingerprint}`);
  o.log.info(`Connect to Host: ${shown} presents ${prints.join(', ')}`);
  await agreed(o, shown, `Its host key is not in ${scan.knownHostsFile}. Fingerprints:\n${prints.join('\n')}\n\nTrust it? The key is recorded and checked on every later connection.`);
  recordHostKeys(scan);
  o.log.info(`Connect to Host: recorded the host key of ${scan.knownHostsName} in ${scan.knownHostsFile}`);
  o.progress.report({ message: 'logging in over ssh…' });
  // Strict checking: a host that now shows another key than the recorded one is refused.
  return probeHost(target, ssh, { signal: o.signal });
}
