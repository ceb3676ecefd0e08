// What every feature shares, free of `vscode`: text put where VS Code renders markup, the
// exec-server URI scheme, errors already shown, the settings owner, and the bounded runner of
// helper programs (ssh, podman, docker, kubectl).
export { noIcons, noLinks } from './notification-text';
export { markReported } from './reported';
export { SCHEME } from './scheme';
export type { SettingsOwner } from './settings';
export { DEFAULT_KEEP_SESSION_SEC } from './settings';
export { HeadTail, runChild, type ChildErrors, type ChildResult, type ChildRunSpec, type RunChildOptions, type StreamKeeper } from './child-run';
