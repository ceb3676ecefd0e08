// What every feature shares, free of `vscode`: text put where VS Code renders markup, the
// exec-server URI scheme, errors already shown, and the settings owner.
export { noIcons, noLinks } from './notification-text';
export { markReported } from './reported';
export { SCHEME } from './scheme';
export type { SettingsOwner } from './settings';
