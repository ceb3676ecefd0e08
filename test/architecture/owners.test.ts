// One owner for limits and wire messages (docs/architecture.md, "One owner each"): the size limits both ends must agree on live
// in src/protocol/limits.ts and the reference's error texts in Messages (src/protocol/errors.ts).
// Checked on the source text of src/**/*.ts: no other file declares a limit constant again or
// writes the 64 MiB message limit as a literal, every Messages entry is used, and no file
// spells out a Messages text inline instead of using the entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { listTs } from '../support/files';
import { Messages } from '../../src/protocol/errors';
import * as Limits from '../../src/protocol/limits';

const repo = process.env.EXEC_SERVER_REPO ?? path.resolve(__dirname, '../../..');
const src = path.join(repo, 'src');
const LIMITS_FILE = path.join('src', 'protocol', 'limits.ts');
const ERRORS_FILE = path.join('src', 'protocol', 'errors.ts');

/** Source without comments (a comment may mention a limit or quote a message). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

const files = listTs(src).map((f) => ({ rel: path.relative(repo, f), code: code(readFileSync(f, 'utf8')) }));

/**
 * 64 MiB constants that are not the message limit (same number, other meaning): how much stdin
 * a process may have queued, and how much terminal output a capture keeps.
 */
const OTHER_64_MIB = new Set(['MAX_PENDING_STDIN_BYTES', 'MAX_CAPTURE_BYTES', 'LARGE_UPLOAD_BYTES']);

test('limits: no file but src/protocol/limits.ts declares a limit constant', () => {
  const names = Object.keys(Limits);
  assert.ok(names.includes('MAX_READ_BLOCK') && names.includes('MAX_MESSAGE_BYTES'), names.join());
  const again: string[] = [];
  for (const { rel, code } of files) {
    if (rel === LIMITS_FILE) continue;
    for (const n of names) if (new RegExp(`\\b(?:const|let|var)\\s+${n}\\b`).test(code)) again.push(`${rel}: ${n}`);
  }
  assert.deepEqual(again, [], 'declared again (import it from src/protocol/limits.ts)');
});

test('limits: the 64 MiB message limit is written as a literal nowhere else', () => {
  assert.equal(Limits.MAX_MESSAGE_BYTES, 64 * 1024 * 1024);
  const literal = /64\s*\*\s*1024\s*\*\s*1024|\b67108864\b|64\s*<<\s*20|0x4000000\b/g;
  const found: string[] = [];
  for (const { rel, code } of files) {
    if (rel === LIMITS_FILE) continue;
    for (const line of code.split('\n')) {
      if (!literal.test(line)) continue;
      literal.lastIndex = 0;
      const declared = /\b(?:const|let|var)\s+([A-Z0-9_]+)\s*=/.exec(line)?.[1];
      if (!declared || !OTHER_64_MIB.has(declared)) found.push(`${rel}: ${line.trim()}`);
    }
    literal.lastIndex = 0;
  }
  assert.deepEqual(found, [], 'use MAX_MESSAGE_BYTES from src/protocol/limits.ts (or name the other meaning in OTHER_64_MIB)');
});

/** A message's text with every argument replaced by \0: the fixed parts a copy would contain. */
function skeleton(entry: string | ((...a: string[]) => string)): string {
  return typeof entry === 'string' ? entry : entry('\0');
}

/** The string and template literals of a file, with each `${…}` replaced by \0. */
function literals(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`/g)) {
    const raw = m[1] ?? m[2] ?? m[3] ?? '';
    out.push(raw.replace(/\$\{[^}]*\}/g, '\0').replace(/\\`/g, '`'));
  }
  return out;
}

test('messages: the literal scanner sees quoted and template texts with their holes', () => {
  assert.deepEqual(literals("a('x'); b(\"y z\"); c(`missing field \\`${k}\\``);"), ['x', 'y z', 'missing field `\0`']);
  assert.equal(skeleton(Messages.missingField), 'missing field `\0`');
});

test('messages: every Messages entry is used outside src/protocol/errors.ts', () => {
  const unused = Object.keys(Messages).filter((k) => !files.some((f) => f.rel !== ERRORS_FILE && new RegExp(`\\bMessages\\.${k}\\b`).test(f.code)));
  assert.deepEqual(unused, [], 'use them or delete them');
});

test('messages: no file writes a Messages text inline (same text, or the text followed by ": …")', () => {
  const inline: string[] = [];
  for (const [key, entry] of Object.entries(Messages)) {
    const s = skeleton(entry);
    for (const { rel, code } of files) {
      if (rel === ERRORS_FILE) continue;
      for (const lit of literals(code)) if (lit === s || lit.startsWith(`${s}: `)) inline.push(`${rel}: '${lit.replace(/\0/g, '${…}')}' is Messages.${key}`);
    }
  }
  assert.deepEqual(inline, []);
});
