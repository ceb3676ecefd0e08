// Bundles and runs bench/carve-outs.ts (the carve-out scan's cost; see that file).
import { runBundled } from './bundle.mjs';

process.exitCode = await runBundled('carve-outs', 'carve-outs');
