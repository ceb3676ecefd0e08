// Runs one install command with a clean environment, its whole output captured to a log file.
// On failure the error names the tool, the exact command and the last lines of its output, so a
// failed nested install is never reduced to "exit 1".
import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The environment for nested installs: the caller's, minus everything an outer npm exports
 * (npm_config_*, npm_node_execpath, npm_lifecycle_*, ...), NODE_OPTIONS and the PATH entries npm
 * prepends for its scripts. An outer `npm test` leaking npm_config_* into `npm install
 * code-server` made its postinstall run under the wrong Node and fail.
 */
export function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) || k === 'NODE_OPTIONS' || k === 'INIT_CWD') continue;
    env[k] = v;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((p) => p && !p.endsWith(`${path.sep}node_modules${path.sep}.bin`) && !p.includes('node-gyp-bin'))
    .join(':');
  return { ...env, ...extra };
}

export class InstallError extends Error {
  constructor(tool, command, detail, tail, log) {
    super(
      `installing ${tool} failed: ${detail}\n  command: ${command}\n  log: ${log}\n` +
        `  last lines of its output:\n${tail.map((l) => `    | ${l}`).join('\n') || '    (no output)'}`,
    );
    this.tool = tool;
  }
}

/** Children running now, so a signal to the installer can stop them too. */
export const activeChildren = new Set();

const quote = (a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);

/** Runs `cmd args` in `cwd`, appending its output to `log`. Rejects with an InstallError. */
export function runLogged(tool, cmd, args, { cwd, env, log, timeoutMs = 15 * 60_000, tailLines = 30 }) {
  const command = [cmd, ...args].map(quote).join(' ');
  return new Promise((resolve, reject) => {
    const out = createWriteStream(log, { flags: 'a' });
    out.write(`\n$ (cd ${quote(cwd)} && ${command})\n`);
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    activeChildren.add(child);
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    const fail = (detail) => {
      out.end(() => {
        let tail = [];
        try {
          tail = readFileSync(log, 'utf8').trimEnd().split('\n').slice(-tailLines);
        } catch {}
        reject(new InstallError(tool, `(cd ${quote(cwd)} && ${command})`, detail, tail, log));
      });
    };
    child.once('error', (err) => {
      clearTimeout(timer);
      activeChildren.delete(child);
      fail(`could not start ${cmd}: ${err.message}`);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      activeChildren.delete(child);
      if (timedOut) return fail(`timed out after ${timeoutMs / 1000} s`);
      if (code === 0) return out.end(() => resolve());
      fail(signal ? `killed by ${signal}` : `exit ${code}`);
    });
  });
}
