// The user-experience flows of docs/extension.md ("First steps in detail") (first contact, Add Environment, Open Remote Folder),
// driven through the real workbench UI (ux-driver.ts ↔ harness/ui.mjs).
import { registerUxAddEnvironmentTests } from './ux-add-environment-tests';
import { registerUxFirstContactTests } from './ux-first-contact-tests';
import { registerUxOpenFolderTests } from './ux-open-folder-tests';
import { registerUxTerminalProfileTests } from './ux-terminal-profile-tests';

export function registerUxTests(): void {
  registerUxFirstContactTests();
  registerUxTerminalProfileTests();
  registerUxAddEnvironmentTests();
  registerUxOpenFolderTests();
}
