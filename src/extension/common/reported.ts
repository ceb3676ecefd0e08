// Errors already shown to the user: whoever shows one marks it, and the command wrapper
// (ui/command-registry.ts) does not show it a second time.
const reported = new WeakSet<object>();

export function markReported(e: unknown): void {
  if (typeof e === 'object' && e !== null) reported.add(e);
}

export function wasReported(e: unknown): boolean {
  return typeof e === 'object' && e !== null && reported.has(e);
}
