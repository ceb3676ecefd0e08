// The terminal panel's '+' button (and every "new terminal" that names no profile) opens VS Code's
// default profile, `terminal.integrated.defaultProfile.<os>`, which may name an extension's
// contributed profile by its title. In a remote window (every folder an exec-server: folder) the
// extension sets it to its own profile at workspace scope — in the workspace file only, never the
// user's settings and never a folder's .vscode/settings.json (in a single-folder window that file
// is the host's, inside the user's project) — and takes it back when the window stops being
// remote. docs/extension.md, "What it does" (Terminals).
import { createHash } from 'node:crypto';

/** The contributed profile's title (package.json contributes.terminal.profiles). */
export const PROFILE_TITLE = 'Exec Server';

/** VS Code's platform key in `terminal.integrated.defaultProfile.<key>`. */
export function platformKey(platform: NodeJS.Platform = process.platform): 'linux' | 'osx' | 'windows' {
  return platform === 'darwin' ? 'osx' : platform === 'win32' ? 'windows' : 'linux';
}

export const defaultProfileSetting = (platform?: NodeJS.Platform): string => `terminal.integrated.defaultProfile.${platformKey(platform)}`;

export interface ProfileWindow {
  /** Every workspace folder is an exec-server: folder (and there is one at least). */
  remote: boolean;
  /** The window has a workspace file (saved or untitled): workspace scope is that file. */
  hasWorkspaceFile: boolean;
  /** The setting's workspace-scope value now. */
  workspaceValue: unknown;
  /** This extension set that value (and it was not changed since). */
  ours: boolean;
}

/**
 * What to do with the workspace-scope default profile: `set` it to ours, `clear` the value we set,
 * or leave it (`keep`): a value the user chose stays; without a workspace file there is nothing the
 * extension may write (`noWorkspaceFile`).
 */
export function defaultProfilePlan(w: ProfileWindow): 'set' | 'clear' | 'keep' | 'noWorkspaceFile' {
  const isOurs = w.ours && w.workspaceValue === PROFILE_TITLE;
  if (!w.remote) return isOurs ? 'clear' : 'keep';
  if (w.workspaceValue !== undefined) return 'keep';
  return w.hasWorkspaceFile ? 'set' : 'noWorkspaceFile';
}

/**
 * The workspace file "Open in New Window" opens for a remote folder: the folder, and the default
 * profile set to ours from the first moment (before the extension has even activated there).
 * `dir` is a name for its folder (one per environment and path), `file` its name ("project (devbox)"
 * is the window's title).
 */
export function remoteWindowWorkspace(environment: string, folderPath: string, folderUri: string, platform?: NodeJS.Platform): { dir: string; file: string; text: string } {
  const base = folderPath.replace(/\/+$/, '').split('/').pop() || 'root';
  // File names: no separators or control characters, bounded.
  const clean = (s: string) => s.replace(/[\u0000-\u001f\u007f/\\:*?"<>|]/g, '_').slice(0, 80);
  const dir = createHash('sha256').update(`${environment}\n${folderPath}`).digest('hex').slice(0, 16);
  const file = `${clean(base)} (${clean(environment)}).code-workspace`;
  const text = JSON.stringify({ folders: [{ uri: folderUri, name: `${base} (${environment})` }], settings: { [defaultProfileSetting(platform)]: PROFILE_TITLE } }, null, 2) + '\n';
  return { dir, file, text };
}
