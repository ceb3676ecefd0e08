// The URI scheme of an environment's files: `exec-server://<environment>/<absolute path>` (the
// FileSystemProvider, workspace folders, search and terminals' working directories all read it).
export const SCHEME = 'exec-server';
