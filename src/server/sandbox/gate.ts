// The `sandbox` parameter on methods that do not enforce one. The methods in SANDBOX_AWARE —
// those whose params declare a `sandbox` in src/protocol/types.ts (SANDBOX_METHODS) — decode it
// themselves (process/start runs under bubblewrap, fs/* enforce the profile in-process); any
// other method that receives a *managed* sandbox is refused, so a request is never carried out
// with less confinement than it asked for. `disabled` and `external` (confinement applied by
// the caller) need nothing from us.
import { invalidRequest } from '../../protocol/errors';
import { SANDBOX_METHODS } from '../../protocol/methods';

export const SANDBOX_AWARE: ReadonlySet<string> = new Set(SANDBOX_METHODS);

export function checkSandbox(method: string, params: unknown): void {
  if (SANDBOX_AWARE.has(method)) return;
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return;
  const sandbox = (params as { sandbox?: unknown }).sandbox;
  if (sandbox === null || sandbox === undefined || typeof sandbox !== 'object') return;
  const permissions = (sandbox as { permissions?: unknown }).permissions;
  const type = permissions && typeof permissions === 'object' ? (permissions as { type?: unknown }).type : undefined;
  if (type === 'disabled' || type === 'external') return;
  throw invalidRequest(`${method} cannot enforce a sandbox (permissions type \`${String(type)}\`) on this exec-server; send sandbox: null or permissions type \`disabled\``);
}
