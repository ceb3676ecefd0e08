// Benchmark inputs, created once under the temp dir and reused across runs (a 50 000-entry
// tree takes seconds to build). Contents are deterministic so every read can be verified.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Fixtures {
  root: string;
  /** Small file for fs/getMetadata round trips. */
  smallFile: string;
  bigFile: string;
  bigFileBytes: number;
  bigFileSha256: string;
  /** Directory whose recursive listing has exactly walkEntries entries. */
  walkRoot: string;
  walkEntries: number;
}

/** The byte at offset i of the big file: a 251-periodic ramp (251 is prime, so block seams show). */
export function patternBuffer(bytes: number): Buffer {
  const b = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < Math.min(bytes, 251); i++) b[i] = i;
  for (let filled = Math.min(bytes, 251); filled < bytes; filled *= 2) b.copy(b, filled, 0, Math.min(filled, bytes - filled));
  return b;
}

export function sha256(chunks: Uint8Array[]): string {
  const h = createHash('sha256');
  for (const c of chunks) h.update(c);
  return h.digest('hex');
}

export function prepareFixtures(bigFileBytes: number, walkEntries: number): Fixtures {
  // Short root: fs/walk returns full file:// URIs and the reference caps a response at 4 MiB.
  const root = path.join(os.tmpdir(), 'esb');
  mkdirSync(root, { recursive: true });
  const smallFile = path.join(root, 'small.txt');
  if (!existsSync(smallFile)) writeFileSync(smallFile, 'hello\n');

  const bigFile = path.join(root, `big-${bigFileBytes}.bin`);
  const content = patternBuffer(bigFileBytes);
  if (!existsSync(bigFile) || statSync(bigFile).size !== bigFileBytes || !readFileSync(bigFile).equals(content)) {
    writeFileSync(bigFile, content);
  }
  const bigFileSha256 = sha256([content]);

  // Layout: D directories, each with F files; entries = D * (F + 1).
  const perDir = 100;
  const dirs = Math.ceil(walkEntries / perDir);
  const walkRoot = path.join(root, `w${walkEntries}`);
  const done = path.join(root, `w${walkEntries}.done`);
  if (!existsSync(done)) {
    let made = 0;
    for (let d = 0; d < dirs && made < walkEntries; d++) {
      const dir = path.join(walkRoot, `d${d}`);
      mkdirSync(dir, { recursive: true });
      made++;
      for (let f = 0; f < perDir - 1 && made < walkEntries; f++, made++) writeFileSync(path.join(dir, `f${f}`), '');
    }
    writeFileSync(done, String(made));
  }
  return { root, smallFile, bigFile, bigFileBytes, bigFileSha256, walkRoot, walkEntries: Number(readFileSync(done, 'utf8')) };
}
