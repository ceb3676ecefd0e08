// Builds a child's environment (protocol §6a "envPolicy"). Without a policy the child gets
// exactly the `env` the client sent; nothing of the server's environment leaks through.
import type { EnvPolicy } from '../../protocol/types';

const CORE_VARS = ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'USER', 'USERNAME', 'TMPDIR', 'TEMP', 'TMP'];
const DEFAULT_EXCLUDES = ['*KEY*', '*SECRET*', '*TOKEN*'];

/** Case-insensitive glob with `*` and `?` (the only wildcards the policy uses). */
export function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(
    '^' + pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$',
    'i',
  );
  return re.test(name);
}

export function buildChildEnv(
  env: Record<string, string>,
  policy: EnvPolicy | undefined,
  serverEnv: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  if (!policy) return { ...env };
  let out: Record<string, string> = {};
  const inherit = policy.inherit ?? 'all';
  for (const [k, v] of Object.entries(serverEnv)) {
    if (v === undefined) continue;
    if (inherit === 'all' || (inherit === 'core' && CORE_VARS.includes(k))) out[k] = v;
  }
  const excludes = [...(policy.ignoreDefaultExcludes ? [] : DEFAULT_EXCLUDES), ...(policy.exclude ?? [])];
  for (const k of Object.keys(out)) if (excludes.some((p) => globMatch(p, k))) delete out[k];
  Object.assign(out, policy.set ?? {});
  const only = policy.includeOnly ?? [];
  if (only.length > 0) out = Object.fromEntries(Object.entries(out).filter(([k]) => only.some((p) => globMatch(p, k))));
  return Object.assign(out, env);
}
