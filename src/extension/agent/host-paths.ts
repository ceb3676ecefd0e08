// Path facts of a remote environment for its agent endpoint's gate (gate.ts HostPaths): asked
// of the host's own server over one connection of the endpoint (fs/canonicalize resolves
// symlinks and `..` THERE). Whatever cannot be answered in time is undefined, which the gate
// treats as outside every workspace folder (asked), never inside.
import type { ClientChannel } from '../../rpc/channel';
import { uriToPath } from '../../server/paths';
import type { HostPaths } from './gate';
import type { RelayTarget } from './relay';

/** Opening the link (ssh, then the host's node) can take seconds on a loaded machine; an answer on an open link should not. */
const OPEN_MS = 15_000;
const ANSWER_MS = 5000;

function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  return Promise.race([p.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}

export function hostPaths(target: RelayTarget): HostPaths & { close(): void } {
  let link: Promise<{ ch: ClientChannel; sandboxes: boolean }> | undefined;
  const open = () => {
    if (link) return link;
    const opening = (async () => {
      const ch = await target.open();
      const init = (await ch.request('initialize', { clientName: 'vscode-exec-server-gate' })) as { environmentInfo?: { capabilities?: { managedSandboxProcesses?: unknown } } };
      ch.notify('initialized', {});
      // Only a server that says it enforces managed sandboxes (this project's, where bubblewrap
      // works) gets sandbox-first; the reference does not say so (and lacks this project's
      // carve-outs), so its commands ask.
      return { ch, sandboxes: init?.environmentInfo?.capabilities?.managedSandboxProcesses === true };
    })();
    link = opening;
    // A failed or dropped link is opened again on the next question.
    opening.then(
      ({ ch }) => ch.onClose(() => link === opening && (link = undefined)),
      () => link === opening && (link = undefined),
    );
    return opening;
  };
  return {
    name: target.name,
    async realPath(p) {
      if (!p.startsWith('/')) return undefined;
      const l = await within(open(), OPEN_MS);
      if (!l) return undefined;
      const r = (await within(l.ch.request('fs/canonicalize', { path: p }), ANSWER_MS)) as { path?: unknown } | undefined;
      return typeof r?.path === 'string' ? uriToPath(r.path) : undefined;
    },
    async sandboxes() {
      return (await within(open(), OPEN_MS))?.sandboxes ?? false;
    },
    close() {
      void link?.then(({ ch }) => ch.close('agent endpoint stopped'), () => undefined);
      link = undefined;
    },
  };
}
