// What credentialMasking does to a proxied start before it spawns (docs/security.md "Credential
// masking"): a CA for the process and its bundle in the child's TLS variables (always, as on
// the reference), and — only for a non-login shell command — the dummies in place of the
// secrets. For any other argv the reference's "unavailable" line is logged and the child gets
// the real values; the proxy then intercepts nothing.
import { CredentialBroker, MASKING_UNAVAILABLE, maskableArgv, maskEnv, type CustomProvider } from './credentials';
import type { Masking } from './http-proxy';
import { CA_BUNDLE_ENV_KEYS, ProcessCa } from './mitm-ca';

export async function credentialMasking(
  env: Record<string, string>,
  argv: readonly string[],
  providers: CustomProvider[],
  log: (level: 'warn', message: string) => void,
): Promise<{ env: Record<string, string>; masking: Masking }> {
  const masked = maskEnv(env, providers);
  for (const w of masked.warnings) log('warn', w);
  const maskable = maskableArgv(argv);
  if (!maskable) log('warn', MASKING_UNAVAILABLE);
  const ca = await ProcessCa.create();
  const out = maskable ? masked.env : { ...env };
  for (const k of CA_BUNDLE_ENV_KEYS) out[k] = ca.bundlePath;
  return { env: out, masking: { broker: new CredentialBroker(maskable ? masked.credentials : []), ca } };
}
