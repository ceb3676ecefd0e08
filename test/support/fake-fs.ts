// A fake filesystem for the sandbox's path resolution (src/server/sandbox/resolve.ts FsProbe):
// path → 'directory' | 'file' | 'symlink:<target>'; a directory lists the entries right below it.
import path from 'node:path';
import type { FsProbe } from '../../src/server/sandbox/resolve';

export function fakeFs(entries: Record<string, string>): FsProbe {
  return {
    kind: (p) => {
      const e = entries[p];
      if (e === undefined) return 'missing';
      return e.startsWith('symlink:') ? 'symlink' : (e as 'directory' | 'file');
    },
    readlink: (p) => {
      const e = entries[p];
      if (!e?.startsWith('symlink:')) throw Object.assign(new Error('EINVAL'), { code: 'EINVAL' });
      return e.slice('symlink:'.length);
    },
    list: (p) => Object.keys(entries).filter((k) => k !== p && path.dirname(k) === p).map((k) => path.basename(k)),
  };
}
