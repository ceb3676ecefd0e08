// Bounded metric attributes: a method label is a protocol method name or `other` (a client
// can send any string as a method; a label per string would grow the metric set without
// bound). test/telemetry/config.test.ts fails when the server's method table has a method
// this list lacks (add it here).
const KNOWN = new Set<string>([
  'initialize',
  'initialized',
  'environment/info',
  'environment/status',
  'environmentConfig/read',
  'process/start',
  'process/read',
  'process/write',
  'process/signal',
  'process/terminate',
  'process/resize',
  'process/closeStdin',
  'process/ack',
  'fs/readFile',
  'fs/writeFile',
  'fs/createDirectory',
  'fs/getMetadata',
  'fs/canonicalize',
  'fs/readDirectory',
  'fs/remove',
  'fs/copy',
  'fs/walk',
  'fs/open',
  'fs/readBlock',
  'fs/close',
  'fs/rename',
  'fs/watch',
  'fs/unwatch',
  'fs/watchMissing',
  'http/request',
]);

export const KNOWN_METHODS: ReadonlySet<string> = KNOWN;

/** The metric label of a method name: itself when the protocol knows it, else `other`. */
export function methodLabel(method: string): string {
  return KNOWN.has(method) ? method : 'other';
}

/** The metric label of a process/start `sandboxType` (values this server answers; else `other`). */
export function sandboxLabel(sandboxType: string): string {
  return sandboxType === 'none' || sandboxType === 'linuxSeccomp' ? sandboxType : 'other';
}
