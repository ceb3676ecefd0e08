// Find in Files / Go to File on exec-server: folders, for the activation.
export { registerSearchCommands } from './commands';
