// The client always sends file:// URIs (percent-encoded as a URL would be); servers answer
// with URIs (reference) or, in places, plain paths (tolerated).
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as path from 'node:path';

export function toWireUri(p: string): string {
  if (p.startsWith('file://')) return p;
  if (!path.isAbsolute(p)) throw new Error(`path must be absolute: ${p}`);
  return pathToFileURL(p).href;
}

export function fromWireUri(u: string): string {
  return u.startsWith('file://') ? fileURLToPath(u) : u;
}
