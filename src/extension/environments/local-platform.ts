// Where the Local environment can run. Its engine runs inside the extension host and needs
// POSIX processes (process groups, signals) and node-pty's Unix PTYs: Linux and macOS. On
// Windows it cannot yet (docs/platforms.md has the design of a Windows engine); remote
// environments work from there all the same, since only the engine needs the local OS.
// Free of `vscode`.

const NAMES: Partial<Record<NodeJS.Platform, string>> = { win32: 'Windows', freebsd: 'FreeBSD', openbsd: 'OpenBSD', sunos: 'Solaris', aix: 'AIX' };

/** Why Local cannot run on `platform` (plain words for a notification), or undefined where it can. */
export function localUnsupported(platform: NodeJS.Platform = process.platform): string | undefined {
  if (platform === 'linux' || platform === 'darwin') return undefined;
  return `Local terminals are not supported on ${NAMES[platform] ?? platform} yet: the Local environment runs its processes and terminals on Linux and macOS only. Remote environments work from this machine: use Connect to Host…, or Add Environment with an exec-server's URL or command.`;
}
