// Connect to Host… (command, trust on first use, status indicator), for the activation.
export { registerSshCommands } from './connect';
export { lazyAskpass } from './askpass';
