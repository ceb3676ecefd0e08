// A ServerConnection decorator that asks the approval gate before an agent request starts a
// process or changes files. A denial answers with a JSON-RPC error and the inner connection
// never sees the request, so nothing changes. Everything else passes through untouched.
import { ErrorCodes, RpcError } from '../../protocol/errors';
import type { ParamsOf, ProcessStartParams, RequestMethod, ResultOf } from '../../protocol/types';
import type { ServerConnection } from '../../server/api';
import { toLocalPath, type ApprovalDecision, type ApprovalRequest, type FsOperation } from './approval';

const FS_OPERATIONS: Record<string, FsOperation> = {
  'fs/writeFile': 'write',
  'fs/createDirectory': 'create directory',
  'fs/remove': 'delete',
  'fs/copy': 'copy',
  'fs/rename': 'rename',
};

function shown(p: unknown): string {
  return toLocalPath(p) ?? (typeof p === 'string' ? p : '<missing path>');
}

/** The approval question for a wire request, or undefined if the method needs none. */
export function approvalRequestFor(method: string, params: unknown): ApprovalRequest | undefined {
  const p = (params && typeof params === 'object' ? params : {}) as Record<string, unknown>;
  if (method === 'process/start') {
    const argv = Array.isArray(p.argv) ? p.argv.map((a) => String(a)) : ['<missing argv>'];
    return { kind: 'run', argv, cwd: shown(p.cwd) };
  }
  const operation = FS_OPERATIONS[method];
  if (!operation) return undefined;
  if (operation === 'copy' || operation === 'rename') {
    return { kind: 'fs', operation, path: shown(p.sourcePath), destination: shown(p.destinationPath) };
  }
  return { kind: 'fs', operation, path: shown(p.path) };
}

export function denialError(method: string, d: ApprovalDecision): RpcError {
  const why = d.reason === 'timed out' ? 'no answer before the approval timeout' : 'the VS Code user denied it';
  return new RpcError(ErrorCodes.InvalidRequest, `permission denied: ${method} was not approved (${why})`);
}

export interface GateHooks {
  /** An approved process/start is about to be sent to the server. */
  beforeProcessStart?(params: ProcessStartParams): void;
  /** ...and its outcome. */
  afterProcessStart?(params: ProcessStartParams, ok: boolean): void;
}

export class GatedServerConnection implements ServerConnection {
  private initializeAnswered = false;
  private initialized = false;

  constructor(
    private readonly inner: ServerConnection,
    private readonly decide: (req: ApprovalRequest) => Promise<ApprovalDecision>,
    private readonly hooks: GateHooks = {},
  ) {}

  request<M extends RequestMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    return this.requestUntyped(method, params) as Promise<ResultOf<M>>;
  }

  async requestUntyped(method: string, params: unknown): Promise<unknown> {
    // Before the handshake the inner connection rejects everything: do not bother the user.
    const req = this.initialized ? approvalRequestFor(method, params) : undefined;
    if (req) {
      const decision = await this.decide(req);
      if (!decision.allowed) throw denialError(method, decision);
    }
    const observed = method === 'process/start' && req !== undefined && params !== null && typeof params === 'object';
    if (observed) this.hooks.beforeProcessStart?.(params as ProcessStartParams);
    let result: unknown;
    try {
      result = await this.inner.requestUntyped(method, params);
    } catch (e) {
      if (observed) this.hooks.afterProcessStart?.(params as ProcessStartParams, false);
      throw e;
    }
    if (method === 'initialize') this.initializeAnswered = true;
    if (observed) this.hooks.afterProcessStart?.(params as ProcessStartParams, true);
    return result;
  }

  notification(method: string, params: unknown): boolean {
    const ok = this.inner.notification(method, params);
    if (ok && method === 'initialized' && this.initializeAnswered) this.initialized = true;
    return ok;
  }

  close(): void {
    this.inner.close();
  }
}
