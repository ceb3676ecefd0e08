// `npm run bench:containers` entry: bundles bench/containers-main.ts (podman exec stdio vs ssh
// stdio to a local sshd) with esbuild and runs it. Flags: --quick.
import { runBundled } from './bundle.mjs';

process.exitCode = await runBundled('containers-main', 'containers');
