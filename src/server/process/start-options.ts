// process/start's `metadata` (ExecMetadata: which thread / tool call started the command) and
// `shellSnapshot` (ShellSnapshotRequest, shellSnapshotV2), validated as the reference does
// (codex 0.169, measured): malformed → -32602 with its texts. Only the shape is checked here;
// what a snapshot does to the start is ./shell-snapshot.ts (metadata changes nothing).
import { invalidParams } from '../../protocol/errors';
import { decodeStruct, optional, str, uuid, type FieldSpec } from '../serde-struct';

export interface ExecMetadata {
  threadId?: string;
  toolCallId?: string;
}
export interface ShellSnapshotRequest {
  scopeId: string;
  shell: { name: string; path: string };
}

const METADATA_FIELDS: FieldSpec[] = [
  { name: 'threadId', decode: optional(uuid) },
  { name: 'toolCallId', decode: optional(str) },
];

export function decodeMetadata(raw: unknown): ExecMetadata | undefined {
  if (raw === undefined || raw === null) return undefined;
  return decodeStruct(raw, 'ExecMetadata', METADATA_FIELDS) as ExecMetadata;
}

export const MAX_SNAPSHOT_SCOPE_BYTES = 256;

const SHELL_FIELDS: FieldSpec[] = [
  { name: 'name', decode: str, required: true },
  { name: 'path', decode: str, required: true },
];
const SNAPSHOT_FIELDS: FieldSpec[] = [
  { name: 'scopeId', decode: str, required: true },
  { name: 'shell', decode: (v) => decodeStruct(v, 'ShellInfo', SHELL_FIELDS), required: true },
];

export function decodeShellSnapshot(raw: unknown): ShellSnapshotRequest | undefined {
  if (raw === undefined || raw === null) return undefined;
  const o = decodeStruct(raw, 'ShellSnapshotRequest', SNAPSHOT_FIELDS) as unknown as ShellSnapshotRequest;
  const bytes = Buffer.byteLength(o.scopeId);
  if (bytes === 0 || bytes > MAX_SNAPSHOT_SCOPE_BYTES) throw invalidParams(`shell snapshot scope must be non-empty and at most ${MAX_SNAPSHOT_SCOPE_BYTES} bytes`);
  return o;
}
