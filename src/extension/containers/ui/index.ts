// Connect to Container… (palette, remote indicator), for the activation.
export { registerContainerCommands } from './connect';
