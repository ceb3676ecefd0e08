// The product's "Exec Server" log as files under VS Code's logs folder: tests read it as the
// event that something was decided (a question asked or settled, a command's failure handled),
// since the extension host offers no other signal for those moments.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { config } from './config';
import { assert } from './util';

/** Every file under `dir` (recursively). */
function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath ?? (e as { path?: string }).path ?? dir, e.name));
}

/** The product's own log files under VS Code's logs folder (the "Exec Server" channel). */
export function productLogs(): string[] {
  const { logsDir } = config();
  assert(logsDir, 'the harness names VS Code\'s logs folder (config.logsDir)');
  return listFiles(logsDir).filter((f) => f.includes(`${path.sep}exec-server.exec-server${path.sep}`) || path.basename(f) === 'Exec Server.log');
}

/** Every line of the Exec Server log matching `re`, now. */
export function logLines(re: RegExp): string[] {
  return productLogs().flatMap((f) => readFileSync(f, 'utf8').split('\n')).filter((l) => re.test(l));
}
