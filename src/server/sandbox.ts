// The `sandbox` parameter of process/start and fs/*. The reference can confine a request
// (permissions type `managed`, enforced with bubblewrap/seatbelt); this server cannot, so
// such a request is refused clearly instead of silently running unconfined. `disabled`
// and `external` (confinement applied by the caller) need nothing from us.
import { invalidRequest } from '../protocol/errors';

export function checkSandbox(params: unknown): void {
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return;
  const sandbox = (params as { sandbox?: unknown }).sandbox;
  if (sandbox === null || sandbox === undefined || typeof sandbox !== 'object') return;
  const permissions = (sandbox as { permissions?: unknown }).permissions;
  const type = permissions && typeof permissions === 'object' ? (permissions as { type?: unknown }).type : undefined;
  if (type === 'disabled' || type === 'external') return;
  throw invalidRequest(
    `sandboxed execution is not supported by this exec-server (sandbox permissions type \`${String(type)}\`); send sandbox: null or permissions type \`disabled\``,
  );
}
