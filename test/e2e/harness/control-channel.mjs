// The file channel between the suite (inside the extension host) and the harness (Playwright):
// the suite writes <controlDir>/<prefix><id>.request.json and polls for <prefix><id>.result.json.
// One reader of that protocol for every kind of request (approvals, quick input), so each kind
// sees only its own files and every result lands whole.
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The requests with `prefix` that have no result yet, each with how long it has been pending
 * (measured from the first poll that saw it; `firstSeen` is the caller's memory of that).
 */
export function pendingRequests(controlDir, prefix, firstSeen) {
  let names;
  try {
    names = readdirSync(controlDir).filter((n) => n.startsWith(prefix) && n.endsWith('.request.json'));
  } catch {
    return [];
  }
  const pending = [];
  for (const name of names) {
    const base = name.replace('.request.json', '');
    const resultFile = path.join(controlDir, `${base}.result.json`);
    if (existsSync(resultFile)) continue;
    let req;
    try {
      req = JSON.parse(readFileSync(path.join(controlDir, name), 'utf8'));
    } catch {
      continue; // being written
    }
    if (!firstSeen.has(name)) firstSeen.set(name, Date.now());
    pending.push({ req, resultFile, screenshot: path.join(controlDir, `${base}.png`), waitedMs: () => Date.now() - firstSeen.get(name) });
  }
  return pending;
}

/** The suite polls for the result file: it must never see it half written (temp + rename). */
export function writeResult(file, value) {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(value));
  renameSync(tmp, file);
}
