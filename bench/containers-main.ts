// `npm run bench:containers`: the container transport next to ssh. The same ExecServerClient
// drives this repository's CLI over two stdio transports: `podman exec -i -- NAME exec-server
// --listen stdio://` (a container made from this machine's root file system with `--rootfs /:O`,
// the CLI installed in it by Connect to Container's own installer) and `ssh -F … alias
// exec-server --listen stdio://` to a local sshd (test/support/sshd.ts). Measured per transport:
// JSON-RPC round trip (fs/getMetadata /), command round trip (process/start of `true` until
// closed), and 64 MiB of process output (`head -c 64M /dev/zero`, every byte counted).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ExecClient } from '../src/client/api';
import { connectCommand } from '../src/client/connect';
import { connectContainer } from '../src/extension/containers/connect';
import { chooseContainerExecutor, findBundle, installInContainer, planContainerInstall, probeContainer } from '../src/extension/containers/setup';
import type { ContainerTarget } from '../src/extension/containers/target';
import { havePodman, PODMAN, removeContainer, startTestContainer } from '../test/support/podman';
import { binDir, startSshd } from '../test/support/sshd';
import { runToEnd } from './run-to-end';
import { median, MiB, nowMs, percentile } from './stats';

const OUTPUT_BYTES = 64 * MiB;

async function measure(label: string, c: ExecClient, quick: boolean) {
  const rttN = quick ? 200 : 1000;
  const cmdN = quick ? 10 : 40;
  const rounds = quick ? 2 : 5;
  for (let i = 0; i < 50; i++) await c.fs.stat('/');
  const rtt: number[] = [];
  for (let i = 0; i < rttN; i++) {
    const t = nowMs();
    await c.fs.stat('/');
    rtt.push(nowMs() - t);
  }
  await runToEnd(c, ['true']);
  const cmd: number[] = [];
  for (let i = 0; i < cmdN; i++) {
    const t = nowMs();
    await runToEnd(c, ['true']);
    cmd.push(nowMs() - t);
  }
  const rate: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = nowMs();
    const n = await runToEnd(c, ['head', '-c', String(OUTPUT_BYTES), '/dev/zero']);
    if (n !== OUTPUT_BYTES) throw new Error(`${label}: ${n} bytes of output arrived, ${OUTPUT_BYTES} expected`);
    rate.push(OUTPUT_BYTES / MiB / ((nowMs() - t) / 1000));
  }
  return { label, rttP50: percentile(rtt, 50), rttP99: percentile(rtt, 99), cmdP50: percentile(cmd, 50), outMiBs: median(rate) };
}

export async function main(repo: string): Promise<number> {
  const quick = process.argv.includes('--quick');
  if (!havePodman()) {
    console.error('bench:containers needs podman and runc (node scripts/tools/install.mjs podman runc)');
    return 2;
  }
  const work = mkdtempSync(path.join(os.tmpdir(), 'es-bench-ctr-'));
  const name = `es-bench-ctr-${process.pid}`;
  const results = [];
  let sshd: Awaited<ReturnType<typeof startSshd>> | undefined;
  try {
    // podman: the container and the CLI installed the way Connect to Container installs it.
    startTestContainer(name, { hostname: 'es-bench' });
    const target: ContainerTarget = { cli: 'podman', program: PODMAN, container: name };
    const facts = await probeContainer(target);
    const bundle = findBundle(repo, 'bench');
    await installInContainer(target, facts, bundle, planContainerInstall(target, facts, bundle));
    const exec = chooseContainerExecutor(await probeContainer(target));
    if (!exec) throw new Error('the CLI was installed but not found in the container');
    const pc = await connectContainer(target, exec.argv);
    results.push(await measure('podman exec stdio', pc, quick));
    await pc.close();

    // ssh to a local sshd, the same CLI on the login's PATH.
    const pathBin = binDir(path.join(work, 'bin'), { 'exec-server': `#!/bin/sh\nexec ${process.execPath} ${path.join(repo, 'dist', 'cli.js')} "$@"\n` });
    mkdirSync(path.join(work, 'home'), { recursive: true });
    sshd = await startSshd([{ alias: 'bench', env: { HOME: path.join(work, 'home'), PATH: `${pathBin}:/usr/bin:/bin` } }], { parent: work });
    const sc = await connectCommand('ssh', ['-F', sshd.configFile, '-T', '-o', 'BatchMode=yes', '--', 'bench', 'exec-server --listen stdio://']);
    results.push(await measure('ssh stdio (local sshd)', sc, quick));
    await sc.close();
  } finally {
    await sshd?.stop();
    removeContainer(name);
    rmSync(work, { recursive: true, force: true });
  }
  const f = (n: number) => n.toFixed(n < 10 ? 3 : 1);
  console.log(`\nContainer transport vs ssh (${quick ? 'quick' : 'full'}; 2 cores, shared)\n`);
  console.log('| transport | RPC round trip p50 / p99 (ms) | command round trip p50 (ms) | 64 MiB output (MiB/s, median) |');
  console.log('|---|---|---|---|');
  for (const r of results) console.log(`| ${r.label} | ${f(r.rttP50)} / ${f(r.rttP99)} | ${f(r.cmdP50)} | ${f(r.outMiBs)} |`);
  return 0;
}
