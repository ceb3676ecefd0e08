// Connect to Host under attack, against a REAL sshd (test/support/sshd.ts: 127.0.0.1, throwaway
// keys, `ssh -F <temp config>`). The attacker controls an ssh config (or an Include'd file),
// or the remote host itself: what its shell prints, its file names, its stderr. Each test is
// the attack; the ones marked "held" passed on the code before this file too (kept as guards).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectCommand } from '../../../src/client/connect';
import { sshEnvironmentInput } from '../../../src/extension/ssh/environment';
import { fingerprintOf, recordHostKeys, scanHostKeys } from '../../../src/extension/ssh/hostkey';
import { findBundle, planInstall } from '../../../src/extension/ssh/install';
import { chooseExecutor, probeHost } from '../../../src/extension/ssh/probe';
import { noIcons, noLinks } from '../../../src/extension/common/notification-text';
import { shQuote, SshError, type SshOptions } from '../../../src/extension/ssh/target';
import { cliPath, repoRoot } from '../../support/cli';
import { tempDir } from '../../support/tmp';
import { binDir, startSshd, whichOrThrow, type TestSshd } from '../../support/sshd';

let sshd: TestSshd;
let ssh: SshOptions;
const work = tempDir('ssh-attack-');
const node = process.execPath;
const BASE = '/usr/bin:/bin';

/** VS Code's notification link syntax (notifications render these; a click on command: runs the command with the link's arguments). */
const NOTIFICATION_LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/i;
/** What a hostile host prints: a link that would type into the user's terminal when clicked. */
const LINK = '[Retry](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22touch%20pwned%5Cn%22%7D)';

/** A directory whose name holds shell syntax: `command -v exec-server` on the host prints it. */
const SHELLY = `x;touch pwned-semi;$(touch pwned-subst)\`touch pwned-tick\`'q"`;

before(async () => {
  assert.ok(existsSync(cliPath), `${cliPath} missing: run npm run build`);
  const launcher = `#!/bin/sh\nexec ${node} ${cliPath} "$@"\n`;
  const shellyBin = binDir(path.join(work, SHELLY), { 'exec-server': launcher });
  // A HOME whose name holds a link (PATH cannot: the link has a ':'), with an installed CLI there
  // whose --version prints another one.
  const linkHome = path.join(work, `home-${LINK}`);
  binDir(path.join(linkHome, '.exec-server', 'bin'), { 'exec-server': `#!/bin/sh\n[ "$1" = --version ] && { echo "exec-server ${LINK}"; exit 0; }\nexec ${node} ${cliPath} "$@"\n` });
  // A host whose `sh` is not a shell: it prints a link on stderr and fails (the probe error shows stderr).
  const fakeSh = binDir(path.join(work, 'fake-sh'), { sh: `#!/bin/bash\necho "sh: oops ${LINK}" >&2\nexit 2\n` });
  // The probe's tools without node (this machine's node is in /usr/bin).
  const noNode = binDir(path.join(work, 'no-node-bin'), Object.fromEntries(['sh', 'uname', 'grep', 'ls', 'head', 'ldd'].map((c) => [c, whichOrThrow(c)])));
  // Hosts that print without end: 64 MiB on stdout then nothing for 30 s; 64 MiB on stderr in one line.
  const floodOut = binDir(path.join(work, 'flood-out'), { sh: '#!/bin/bash\nhead -c 67108864 /dev/zero | tr "\\0" x\nsleep 30\n' });
  const floodErr = binDir(path.join(work, 'flood-err'), { sh: '#!/bin/bash\nhead -c 67108864 /dev/zero | tr "\\0" y >&2\nexit 1\n' });
  // A host whose executor floods stderr (2 M lines, and lines of 1 MB) and exits: the saved environment's connect fails.
  const floodStart = binDir(path.join(work, 'flood-start'), {
    'exec-server': `#!/bin/bash\nhead -c 3000000 /dev/zero | tr '\\0' z >&2\necho >&2\nyes 'flooding stderr line padding padding padding padding padding padding padding padding' | head -n 2000000 >&2\nhead -c 1000000 /dev/zero | tr '\\0' w >&2\nexit 3\n`,
  });
  for (const h of ['home-k', 'home-l', 'home-s', 'home-f', 'home-p']) mkdirSync(path.join(work, h), { recursive: true });
  sshd = await startSshd([
    { alias: 'keyscan', unknownHostKey: true, env: { HOME: path.join(work, 'home-k'), PATH: BASE } },
    { alias: 'local-cmd', env: { HOME: path.join(work, 'home-l'), PATH: `${binDir(path.join(work, 'plain-bin'), { 'exec-server': launcher })}:${BASE}` } },
    { alias: 'shelly', env: { HOME: path.join(work, 'home-s'), PATH: `${shellyBin}:${BASE}` } },
    { alias: 'link-home', env: { HOME: linkHome, PATH: BASE } },
    { alias: 'fake-sh', env: { HOME: path.join(work, 'home-f'), PATH: `${fakeSh}:${BASE}` } },
    { alias: 'flood-out', env: { HOME: path.join(work, 'home-f'), PATH: `${floodOut}:${BASE}` } },
    { alias: 'flood-err', env: { HOME: path.join(work, 'home-f'), PATH: `${floodErr}:${BASE}` } },
    { alias: 'flood-start', env: { HOME: path.join(work, 'home-f'), PATH: `${floodStart}:${BASE}` } },
    { alias: 'no-node', env: { HOME: path.join(work, 'home-p'), PATH: `/nonexistent/${LINK}:${noNode}` } },
  ]);
  ssh = { configFile: sshd.configFile, sshPath: whichOrThrow('ssh') };
});
after(async () => {
  await sshd?.stop();
});

/** A config holding only `alias`'s block of the test config, renamed and with `extra` lines. */
function configWith(name: string, alias: string, extra: string[]): string {
  const block = readFileSync(sshd.configFile, 'utf8').split('\n\n').find((b) => b.startsWith(`Host ${alias}\n`))!;
  const file = path.join(sshd.dir, `config-${name}`);
  // ssh takes the first value of an option: the alias's own line of a keyword given in `extra` goes.
  const keys = new Set(extra.map((l) => l.split(/\s+/)[0].toLowerCase()));
  const kept = block.split('\n').filter((l) => !keys.has(l.trim().split(/\s+/)[0].toLowerCase()));
  writeFileSync(file, `${kept.join('\n').replace(/^Host .*$/m, `Host ${name}`)}\n${extra.map((l) => `  ${l}`).join('\n')}\n`);
  return file;
}

describe('ssh attacks (real sshd)', () => {
  it('a config with HostKeyAlias * (or @marker, or HostName a,b): no key is fetched or recorded — `* <key>` in known_hosts would trust that key for every host', async () => {
    const kh = path.join(sshd.dir, 'known_hosts-keyscan');
    for (const [name, extra] of [
      ['star', ['HostKeyAlias *']],
      ['marker', ['HostKeyAlias @cert-authority']],
      ['negated', ['HostKeyAlias !x']],
      ['listed', [`HostName 127.0.0.1,localhost`]],
    ] as const) {
      const cfg = configWith(name, 'keyscan', [...extra]);
      const r = await scanHostKeys({ host: name }, { ...ssh, configFile: cfg }).then(
        (scan) => {
          // What the old code did with it: record the "approved" key under that name.
          recordHostKeys(scan);
          return scan.knownHostsName;
        },
        (e: unknown) => e,
      );
      assert.ok(r instanceof SshError, `${name}: scanned and recorded under ${JSON.stringify(r)}: ${readFileSync(kh, 'utf8')}`);
      assert.match(r.message, /not a plain host name/, name);
      assert.equal(readFileSync(kh, 'utf8'), '', `${name}: nothing recorded`);
    }
    // A plain alias still works (the guard is not a blanket refusal).
    const ok = await scanHostKeys({ host: 'keyscan' }, ssh);
    assert.equal(ok.knownHostsName, `[127.0.0.1]:${sshd.port}`);
  });

  it('held: a config alias that is an ssh option (-oProxyCommand=<program>) is only ever a destination (ssh then refuses the name): probe and key scan run nothing', async () => {
    const marker = path.join(work, 'alias-option-ran');
    const evil = path.join(work, 'evil-proxy.sh');
    writeFileSync(evil, `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
    const alias = `-oProxyCommand=${evil}`;
    const cfg = configWith('dash', 'shelly', []);
    writeFileSync(cfg, readFileSync(cfg, 'utf8').replace(/^Host dash$/m, `Host ${alias}`));
    const opts = { ...ssh, configFile: cfg };
    // As an option (no `--` before it) ssh runs the program: the attack is real.
    spawnSync(ssh.sshPath!, ['-F', cfg, '-T', '-o', 'BatchMode=yes', alias, 'true'], { timeout: 20_000 });
    assert.ok(existsSync(marker), 'without `--` the alias runs its program');
    spawnSync('rm', ['-f', marker]);
    await assert.rejects(probeHost({ host: alias }, opts), (e: unknown) => e instanceof SshError && /hostname contains invalid characters/.test(e.message));
    await assert.rejects(scanHostKeys({ host: alias }, opts), (e: unknown) => e instanceof SshError);
    assert.equal(existsSync(marker), false, 'the alias was read as an option');
  });

  it('held: the key recorded is the one whose fingerprint was shown — a host presenting another key at the login after the scan (TOCTOU) is refused, nothing more recorded', async () => {
    // A second sshd (its own host key) answers at the login: the same name, another machine.
    const other = await startSshd([{ alias: 'other', env: { HOME: path.join(work, 'home-k'), PATH: BASE } }], { parent: work });
    try {
      const kh = path.join(work, 'known_hosts-tofu');
      writeFileSync(kh, '');
      const block = (cfgFile: string, alias: string, port: number) => {
        const b = readFileSync(cfgFile, 'utf8').split('\n\n').find((x) => x.startsWith(`Host ${alias}\n`))!;
        return b.replace(/^Host .*$/m, 'Host tofu').replace(/^\s*(Port|UserKnownHostsFile) .*$/gm, '') + `\n  Port ${port}\n  HostKeyAlias tofu-host\n  UserKnownHostsFile ${kh}\n`;
      };
      const cfg = path.join(work, 'config-tofu');
      writeFileSync(cfg, block(sshd.configFile, 'keyscan', sshd.port));
      const scan = await scanHostKeys({ host: 'tofu' }, { ...ssh, configFile: cfg });
      const shown = scan.keys.map((k) => k.fingerprint);
      recordHostKeys(scan);
      const recorded = readFileSync(kh, 'utf8');
      // Between the scan and the login, "tofu" now reaches the other server.
      writeFileSync(cfg, block(other.configFile, 'other', other.port));
      const e = await probeHost({ host: 'tofu' }, { ...ssh, configFile: cfg }).then(() => undefined, (x: unknown) => x);
      assert.ok(e instanceof SshError, String(e));
      assert.equal(e.kind, 'host-key-changed', e.message);
      assert.equal(readFileSync(kh, 'utf8'), recorded, 'nothing else was recorded');
      const otherKey = readFileSync(path.join(other.dir, 'host_key.pub'), 'utf8').split(' ')[1];
      assert.ok(!shown.includes(fingerprintOf(otherKey)), 'the other key was never shown');
    } finally {
      await other.stop();
    }
  });

  it("the config's LocalCommand (PermitLocalCommand yes) does not run for the probe or the transport, and its output never reaches the protocol stream", async () => {
    const marker = path.join(work, 'local-command-ran');
    const cfg = configWith('lc', 'local-cmd', ['PermitLocalCommand yes', `LocalCommand echo '{"jsonrpc":"2.0","method":"garbage"}'; echo not-json; touch ${marker}`]);
    const plain = spawnSync(ssh.sshPath!, ['-F', cfg, '-T', '--', 'lc', 'true'], { encoding: 'utf8', timeout: 20_000 });
    assert.ok(existsSync(marker), `plain ssh runs the LocalCommand with this config (the config really is hostile): ${plain.stderr}`);
    spawnSync('rm', ['-f', marker]);
    const opts = { ...ssh, configFile: cfg };
    const facts = await probeHost({ host: 'lc' }, opts);
    const ex = chooseExecutor(facts)!;
    assert.equal(ex.kind, 'exec-server');
    const input = sshEnvironmentInput('lc', { host: 'lc' }, opts, ex);
    const client = await connectCommand(input.command!, input.args!, { clientName: 'ssh-attack', initializeTimeoutMs: 20_000 });
    try {
      const p = await client.startProcess({ argv: ['/bin/sh', '-c', 'echo ok-$((6*7))'], cwd: '/', tty: false });
      let out = '';
      p.onOutput((e) => (out += Buffer.from(e.data).toString()));
      assert.equal(await p.exited, 0);
      await p.closed;
      assert.match(out, /ok-42/);
    } finally {
      await client.close();
    }
    assert.equal(existsSync(marker), false, 'the LocalCommand ran on this machine');
  });

  it('held: a host whose exec-server path holds ; $( ) ` \' " — the remote command runs exactly that path, nothing else runs', async () => {
    const facts = await probeHost({ host: 'shelly' }, ssh);
    assert.equal(facts.execServer, path.join(work, SHELLY, 'exec-server'));
    const ex = chooseExecutor(facts)!;
    const input = sshEnvironmentInput('shelly', { host: 'shelly' }, ssh, ex);
    assert.equal(input.args!.at(-1), `${shQuote(facts.execServer!)} --listen stdio://`);
    const client = await connectCommand(input.command!, input.args!, { clientName: 'ssh-attack', initializeTimeoutMs: 20_000 });
    await client.close();
    assert.deepEqual(readdirSync(path.join(work, 'home-s')).filter((n) => n.startsWith('pwned')), [], 'the path was read by a shell as code');
  });

  it('what the host prints never becomes a clickable notification link: a probe that fails with a link on stderr, a PATH and an executor path holding one', async () => {
    const e = await probeHost({ host: 'fake-sh' }, ssh).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.match(e.message, /oops/, 'the host\'s complaint is still shown');
    assert.doesNotMatch(e.message, NOTIFICATION_LINK, e.message);

    const facts = await probeHost({ host: 'no-node' }, ssh);
    const refusal = (() => {
      try {
        planInstall(facts, findBundle(repoRoot, '0.0.0'));
      } catch (x) {
        return x as Error;
      }
      return undefined;
    })();
    assert.ok(refusal, 'no Node on the host: the install is refused');
    assert.match(refusal.message, /no Node\.js on the host's PATH/);
    assert.doesNotMatch(refusal.message, NOTIFICATION_LINK, refusal.message);

    const linked = chooseExecutor(await probeHost({ host: 'link-home' }, ssh))!;
    assert.equal(linked.kind, 'installed');
    assert.match(linked.description, /Retry/);
    assert.doesNotMatch(linked.description, NOTIFICATION_LINK, linked.description);
    assert.ok(linked.path.includes('](command:'), 'the path itself is kept exactly (it is what runs)');
  });

  it('a host printing without end (64 MiB on stdout, or one 64 MiB stderr line): the probe stops at the bound, at once, and the error is a message, not the dump', async () => {
    const started = Date.now();
    const e = await probeHost({ host: 'flood-out' }, ssh, { timeoutMs: 20_000 }).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof SshError, String(e));
    assert.match(e.message, /printed more than 1 MiB on stdout/, e.message.slice(0, 300));
    assert.ok(Date.now() - started < 15_000, `stopped after ${Date.now() - started} ms, not at the 20 s timeout`);

    const f = await probeHost({ host: 'flood-err' }, ssh, { timeoutMs: 60_000 }).then(() => undefined, (x: unknown) => x);
    assert.ok(f instanceof SshError, String(f));
    assert.ok(f.message.length < 4096, `the error message is ${f.message.length} characters`);
    assert.ok(f.stderr.length <= 512 * 1024, `the error keeps ${f.stderr.length} characters of stderr`);
    assert.match(f.message, /yyyy…/, 'the line is shown, cut');
  });

  it("a saved environment whose host floods stderr while it starts (2 M lines, lines of 1 MB) and fails: memory stays bounded and the error quotes a few cut lines", async () => {
    const facts = await probeHost({ host: 'flood-start' }, ssh);
    const input = sshEnvironmentInput('flood-start', { host: 'flood-start' }, ssh, chooseExecutor(facts)!);
    const base = process.memoryUsage().heapUsed;
    let peak = base;
    const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 20);
    const e = await connectCommand(input.command!, input.args!, { clientName: 'ssh-attack', initializeTimeoutMs: 60_000 }).then(
      async (c) => {
        await c.close();
        return undefined;
      },
      (x: unknown) => x as Error,
    );
    clearInterval(sample);
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    assert.ok(e, 'the connect fails (the executor exits 3)');
    assert.match(e.message, /stderr: .*www/, 'the last lines are quoted');
    assert.ok(peak - base < 96 * 1024 * 1024, `the heap grew by ${Math.round((peak - base) / 1048576)} MiB while ~200 MB of stderr streamed`);
    assert.ok(e.message.length < 4096, `the error is ${e.message.length} characters`);
  });
});

describe('ssh attacks: text for VS Code surfaces', () => {
  it('noIcons: `$(icon)` from a config alias or a file name is shown as typed; noLinks: no link survives', () => {
    // VS Code's quick pick renders $(name) and $(name~modifier) unless escaped with a backslash.
    const iconRe = /(?<!\\)\$\([A-Za-z0-9-]+(?:~[A-Za-z]+)?\)/;
    for (const s of ['$(pass-filled) prod (verified)', 'a$(shield)b$(sync~spin)', '$(x)$(y)']) {
      assert.doesNotMatch(noIcons(s), iconRe, s);
      assert.equal(noIcons(s).replace(/\\\$/g, '$'), s, 'nothing else changes');
    }
    for (const s of [LINK, `a ${LINK} b [x](https://evil.example/) [f](file:///etc/passwd)`, '[a]([b](command:x))']) {
      assert.doesNotMatch(noLinks(s), NOTIFICATION_LINK, s);
      assert.equal(noLinks(s).replace(/\] \(/g, ']('), s, 'only the space is added');
    }
  });

  it("a command that prints its reason on stderr and exits at once: the connect error quotes it (stdout's end raced the stderr line, which was lost)", async () => {
    for (let i = 0; i < 5; i++) {
      const e = await connectCommand('/bin/sh', ['-c', 'echo "the-reason-$((6*7)) [x](command:y)" >&2; exit 3'], { clientName: 'ssh-attack', initializeTimeoutMs: 10_000 }).then(
        async (c) => {
          await c.close();
          return undefined;
        },
        (x: unknown) => x as Error,
      );
      assert.ok(e, 'the connect fails');
      assert.match(e.message, /stderr: the-reason-42/, `run ${i}: ${e.message}`);
    }
  });

  it("an ssh config that Includes a FIFO, /dev/zero or a directory: the host list is read at once (the extension host's thread never blocks) and names what it skipped", () => {
    const dir = tempDir('ssh-config-include-');
    const fifo = path.join(dir, 'fifo.conf');
    spawnSync('mkfifo', [fifo]);
    const cfg = path.join(dir, 'config');
    writeFileSync(cfg, `Host before\n  HostName 10.0.0.1\nInclude ${fifo}\nInclude /dev/zero\nInclude ${dir}\nHost after\n  HostName 10.0.0.2\n`);
    // In a child process: on the old code the read of the FIFO never returns.
    const script = `const { readSshConfigHosts } = require(${JSON.stringify(path.join(__dirname, '../../../src/extension/ssh/config.js'))}); const r = readSshConfigHosts(${JSON.stringify(cfg)}); process.stdout.write(JSON.stringify({ hosts: r.hosts.map((h) => h.alias), problems: r.problems }));`;
    const started = Date.now();
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.signal, null, `the read did not finish within 10 s (killed: ${r.signal}) ${r.stderr}`);
    const out = JSON.parse(r.stdout) as { hosts: string[]; problems: string[] };
    assert.deepEqual(out.hosts, ['before', 'after']);
    assert.equal(out.problems.length, 3, out.problems.join('; '));
    assert.ok(out.problems.every((p) => /not a regular file/.test(p)), out.problems.join('; '));
    assert.ok(Date.now() - started < 10_000);
  });

  it('a UserKnownHostsFile that is a FIFO: recording the approved key fails at once with a reason, it does not block the thread', () => {
    const dir = tempDir('ssh-kh-fifo-');
    const fifo = path.join(dir, 'known_hosts');
    spawnSync('mkfifo', [fifo]);
    const scan = { knownHostsFile: fifo, knownHostsName: 'h', keys: [{ line: 'h ssh-ed25519 AAAA', type: 'ssh-ed25519', fingerprint: 'SHA256:x' }] };
    const script = `const { recordHostKeys } = require(${JSON.stringify(path.join(__dirname, '../../../src/extension/ssh/hostkey.js'))}); try { recordHostKeys(${JSON.stringify(scan)}); process.stdout.write('recorded'); } catch (e) { process.stdout.write('refused: ' + e.message); }`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.signal, null, `recording did not return within 10 s (killed: ${r.signal}) ${r.stderr}`);
    assert.match(r.stdout, /^refused: /, r.stdout);
  });

  it('Includes reaching the whole file system (`*` six folders deep from /, /proc/*/*, an endless /proc file): the host list comes back within seconds, naming what it did not read', () => {
    const dir = tempDir('ssh-config-glob-');
    const cfg = path.join(dir, 'config');
    // Also a /proc file that says size 0 and never ends (read to the end: gigabytes; not run
    // against the old code for that reason), and /proc's files by the hundred.
    writeFileSync(cfg, `Host before\nInclude ${'/*'.repeat(6)}\nInclude /proc/self/pagemap\nInclude /proc/*/*\nHost after\n`);
    const script = `const { readSshConfigHosts } = require(${JSON.stringify(path.join(__dirname, '../../../src/extension/ssh/config.js'))}); const r = readSshConfigHosts(${JSON.stringify(cfg)}); process.stdout.write(JSON.stringify({ hosts: r.hosts.map((h) => h.alias), problems: r.problems }));`;
    const started = Date.now();
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.signal, null, `the listing did not finish within 20 s (killed: ${r.signal}) ${r.stderr}`);
    const out = JSON.parse(r.stdout) as { hosts: string[]; problems: string[] };
    assert.ok(out.hosts.includes('before') && out.hosts.includes('after'), JSON.stringify(out.hosts));
    assert.ok(out.problems.some((p) => /reaches too many folders/.test(p)), out.problems.join('; '));
    assert.ok(out.problems.some((p) => /pagemap: larger than 4 MiB/.test(p)), out.problems.join('; '));
    assert.ok(out.problems.some((p) => /Include \/proc\/\*\/\* reaches too many folders|more than 64 files included/.test(p)), out.problems.join('; '));
    assert.ok(Date.now() - started < 20_000);
  });
});
