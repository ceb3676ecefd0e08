// Benchmark inputs, created once under the temp dir and reused across runs (a 50 000-entry
// tree takes seconds to build). Contents are deterministic so every read can be verified.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
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

/**
 * The stdout stream's content as a file: `line` + newline repeated, cut at `bytes` (what
 * `yes line | head -c bytes` prints). `cat` of it is the stream's producer: `yes | head` copies
 * 8 KiB at a time through a second pipe and cannot itself produce more than ~800 MiB/s here
 * (its reader sees 12–23 KiB reads), so it, not the server, set the stream's pace; `cat` of a
 * cached file writes 128 KiB at a time (a bare Node pipe reader: 1.8–3.3 GiB/s, 62 KiB reads).
 */
export function streamFile(root: string, line: string, bytes: number): string {
  const file = path.join(root, `stream-${bytes}.txt`);
  if (!existsSync(file) || statSync(file).size !== bytes) {
    const tmp = `${file}.tmp-${process.pid}`;
    writeFileSync(tmp, Buffer.alloc(bytes, `${line}\n`));
    renameSync(tmp, file);
  }
  return file;
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

const B62 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** 0 → "0", 61 → "Z", 62 → "00", …: the shortest distinct names. */
function shortName(i: number): string {
  return i < 62 ? B62[i] : B62[Math.floor(i / 62) - 1] + B62[i % 62];
}

export function prepareFixtures(bigFileBytes: number, walkEntries: number): Fixtures {
  // Short root: fs/walk returns full file:// URIs and the reference caps a response at 4 MiB.
  const root = path.join(os.tmpdir(), 'esb');
  mkdirSync(root, { recursive: true });
  const smallFile = path.join(root, 'small.txt');
  if (!existsSync(smallFile)) writeFileSync(smallFile, 'hello\n');

  // The big file is verified once when written; its checksum sits next to it, so later runs
  // do not hold 100 MiB in the bench process (its RSS would slow the in-process spawns).
  const bigFile = path.join(root, `big-${bigFileBytes}.bin`);
  const sumFile = `${bigFile}.sha256`;
  let bigFileSha256 = existsSync(sumFile) && existsSync(bigFile) && statSync(bigFile).size === bigFileBytes ? readFileSync(sumFile, 'utf8').trim() : '';
  if (!/^[0-9a-f]{64}$/.test(bigFileSha256)) {
    const content = patternBuffer(bigFileBytes);
    writeFileSync(bigFile, content);
    bigFileSha256 = sha256([content]);
    writeFileSync(sumFile, bigFileSha256);
  }

  // The reference caps a walk response at 4 MiB, counting about (URI length + 64) bytes per
  // entry, so 50 000 entries only fit with URIs under ~19 characters: a short root right under
  // the temp dir, 50 directories of 999 files, one- or two-character base-62 names.
  const perDir = 1000;
  const walkRoot = path.join(os.tmpdir(), walkEntries === 50_000 ? 'ew' : `ew${walkEntries}`);
  const done = path.join(root, `${path.basename(walkRoot)}.v2.done`);
  if (!existsSync(done)) {
    let made = 0;
    for (let d = 0; made < walkEntries; d++) {
      const dir = path.join(walkRoot, shortName(d));
      mkdirSync(dir, { recursive: true });
      made++;
      for (let f = 0; f < perDir - 1 && made < walkEntries; f++, made++) writeFileSync(path.join(dir, shortName(f)), '');
    }
    writeFileSync(done, String(made));
  }
  return { root, smallFile, bigFile, bigFileBytes, bigFileSha256, walkRoot, walkEntries: Number(readFileSync(done, 'utf8')) };
}
