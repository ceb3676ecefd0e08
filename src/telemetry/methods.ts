// Bounded metric attributes: a method label is a protocol method name or `other` (a client
// can send any string as a method; a label per string would grow the metric set without
// bound). The names are the protocol's (REQUEST_METHODS, derived from RequestMap) plus the
// `initialized` notification.
import { REQUEST_METHODS } from '../protocol/methods';

const KNOWN = new Set<string>([...REQUEST_METHODS, 'initialized']);

export const KNOWN_METHODS: ReadonlySet<string> = KNOWN;

/** The metric label of a method name: itself when the protocol knows it, else `other`. */
export function methodLabel(method: string): string {
  return KNOWN.has(method) ? method : 'other';
}

/** The metric label of a process/start `sandboxType` (values this server answers; else `other`). */
export function sandboxLabel(sandboxType: string): string {
  return sandboxType === 'none' || sandboxType === 'linuxSeccomp' ? sandboxType : 'other';
}
