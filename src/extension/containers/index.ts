// Containers as the activation uses them: the connection route of a container environment (its
// exec, whose end names the container's state) and reading one back from its saved command.
export { connectContainer } from './connect';
export { targetOfCommand } from './target';
