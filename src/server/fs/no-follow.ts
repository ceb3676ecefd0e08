// `followSymlinks: false` on fs/* (sent by Codex with an approved, unsandboxed apply_patch
// retry): the path must not pass through a symbolic link. Measured on the reference (which
// opens each component with O_NOFOLLOW): a link as a directory component → -32603 "Not a
// directory (os error 20)"; a link as the final component → per method (ELOOP for
// fs/readFile and fs/writeFile, ENOTDIR for fs/createDirectory, -32600 "path contains a
// symbolic link" for fs/remove); a recursive no-follow fs/remove is refused outright.
// Checked component by component before the operation (fs/writeFile also opens with
// O_NOFOLLOW, so its final component cannot be swapped in between).
import fs from 'node:fs';
import path from 'node:path';
import { RpcError, invalidRequest } from '../../protocol/errors';
import { fsError } from '../os-errors';

export type FinalLinkError = 'ELOOP' | 'ENOTDIR' | 'symlink' | 'allowed';

function errnoError(code: 'ENOTDIR' | 'ELOOP', p: string): RpcError {
  return fsError(Object.assign(new Error(`${code}: ${p}`), { code }));
}

/** Throws the reference's error when `p` (absolute) passes through a symlink; missing components end the check. */
export function checkNoSymlinks(p: string, finalLink: FinalLinkError): void {
  const parts = p.split('/').filter(Boolean);
  let cur = '/';
  for (let i = 0; i < parts.length; i++) {
    cur = path.join(cur, parts[i]);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(cur);
    } catch {
      return; // missing (or unreadable): the operation reports it
    }
    if (!st.isSymbolicLink()) continue;
    if (i < parts.length - 1) throw errnoError('ENOTDIR', p);
    if (finalLink === 'ELOOP' || finalLink === 'ENOTDIR') throw errnoError(finalLink, p);
    if (finalLink === 'symlink') throw invalidRequest('path contains a symbolic link');
  }
}

/** fs/remove with followSymlinks: false. */
export function checkNoFollowRemove(p: string, recursive: boolean): void {
  if (recursive) throw new RpcError(-32603, 'recursive no-follow removal is unsupported');
  checkNoSymlinks(p, 'symlink');
}
