// Wire paths: `file://` URIs (what the reference accepts) or, as this project's extension,
// plain absolute paths. Relative paths are rejected with the reference's message.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { invalidParams, invalidRequest } from '../protocol/errors';

const PLAIN_FILE_URI_PATH = /^file:\/\/(\/[A-Za-z0-9_.,~+=@:!$&'()*;-]*)+$/;
const DOT_OR_EMPTY_SEGMENT = /\/(\.{1,2})?(\/|$)/;

/**
 * Which way uriToPath took, counted so a test can tell that the fast path actually ran (its
 * result is the same as the parser's by design, so only this shows it). One increment per call.
 */
export const uriToPathCounts = { fast: 0, parsed: 0 };

/** Turns a wire URI (or absolute path) into a local absolute path; throws RpcError on bad input. */
export function uriToPath(uri: string): string {
  if (uri.startsWith('/')) {
    if (uri.includes('\0')) throw invalidParams(`'${uri}' is invalid on '${process.platform}'`);
    return path.normalize(uri); // [extension] plain absolute path
  }
  // Fast path for the common case (~5 µs of URL parsing per request here): a file URI whose
  // path has nothing the URL parser would change — no escapes, dot segments, `//`, query,
  // fragment or characters it percent-encodes — is its own path.
  if (uri.startsWith('file:///') && PLAIN_FILE_URI_PATH.test(uri) && !DOT_OR_EMPTY_SEGMENT.test(uri.slice(7))) {
    uriToPathCounts.fast++;
    return uri.slice(7);
  }
  uriToPathCounts.parsed++;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri);
  if (!scheme) throw invalidParams('invalid URI: relative URL without a base');
  if (scheme[1].toLowerCase() !== 'file') throw invalidParams(`unsupported path URI scheme \`${scheme[1]}\``);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw invalidParams('invalid URI: relative URL without a base');
  }
  let p: string;
  try {
    p = fileURLToPath(url);
  } catch {
    // Same wording as the reference for `file://host/x` and friends.
    throw invalidRequest(`'${uri}' is invalid on '${process.platform}'`);
  }
  // A NUL (%00) cannot name a file: the reference answers -32602 with this text (fs and process/start alike).
  if (p.includes('\0')) throw invalidParams(`'${uri}' is invalid on '${process.platform}'`);
  return p;
}

/** Local absolute path → `file://` URI (percent-encoded like a URL). */
export function pathToUri(p: string): string {
  return pathToFileURL(p).href;
}

/**
 * Is `p` the same path as `root` or below it? Both are resolved first (relative parts, `..`,
 * trailing separators), so `/a/b/../c` is inside `/a` and `/ab` is not inside `/a`. The one
 * definition for the engine's sandbox profiles and the extension's gate and approvals.
 */
export function isInside(p: string, root: string): boolean {
  const r = path.resolve(root);
  const x = path.resolve(p);
  return x === r || x.startsWith(r === path.sep ? r : r + path.sep);
}
