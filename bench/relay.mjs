// The relay benchmark of `npm run bench` (bench/relay-main.ts: agent relay vs direct over an ssh tunnel),
// bundled with esbuild and run after the engine scenarios. Flags: --quick, --rounds=N.
import { runBundled } from './bundle.mjs';

process.exitCode = await runBundled('relay-main', 'relay');
