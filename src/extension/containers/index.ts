// Containers as the activation uses them: the connection route of a container environment (the
// installed CLI's detached server, else its exec, whose end names the container's state) and
// whether a reload can bring its terminals back.
export { containerRoute, restorableContainer } from './persist';
