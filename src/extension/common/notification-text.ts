// Text from elsewhere (what a remote host prints, its file names, ssh's stderr, a search tool's
// complaints, an ssh config) put where VS Code renders markup. Notifications render `[label](command:…)`,
// `[label](https://…)` and `[label](file:…)` as links, and a click on a command link runs that
// command with the link's arguments (e.g. workbench.action.terminal.sendSequence: keystrokes
// into the open terminal). Modal dialogs, tree rows and view messages show plain text and do
// not need this. Quick pick labels and descriptions render `$(icon)` codicons. Free of `vscode`.

/**
 * `s` with every `](` written `] (`: nothing of it reads as a link any more, and the text
 * stays readable (link syntax needs `]` and `(` side by side).
 */
export function noLinks(s: string): string {
  return s.replace(/\]\(/g, '] (');
}

/** `s` with every `$(name)` / `$(name~spin)` escaped (`\$(…)`): shown as typed, not as an icon. */
export function noIcons(s: string): string {
  return s.replace(/\$\([a-z0-9-]+?(?:~[a-z0-9-]*?)?\)/gi, (m) => `\\${m}`);
}
