// A stand-in for the model behind `codex app-server`: a local HTTP server (127.0.0.1) speaking the
// Responses API over SSE (`POST /v1/responses`). Each model request is answered with the next
// scripted step (tool calls and/or an assistant message); once the script is used up it answers
// a plain assistant message, so a turn always ends. Every request body is kept, so a test can read
// what Codex sent back to the model (function_call_output / custom_tool_call_output).
// Plain Node (no vscode, no test framework), so the VS Code e2e suite can bundle it too.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One output item of a scripted model response. */
export type MockOutput =
  /** Codex's shell tool: `cmd` is run as `/bin/bash -lc cmd` (extra: other arguments, e.g. `workdir`). */
  | { exec_command: string; callId?: string; extra?: Record<string, unknown> }
  /** Codex's apply_patch (a freeform/custom tool for models Codex knows, e.g. gpt-5.5). */
  | { apply_patch: string; callId?: string }
  /** Any other function tool, arguments as an object. */
  | { function: string; arguments: Record<string, unknown>; callId?: string }
  /** An assistant message (ends the turn when it is the only item). */
  | { message: string };

/** One model response: its output items (a single item may be given bare). */
export type MockStep = MockOutput | MockOutput[];

/** What the model received: one request body, parsed. */
export interface ModelRequest {
  path: string;
  body: any;
  /** Step index answered (-1: script exhausted, the default final message was sent). */
  step: number;
}

/** What Codex returned for one tool call (taken from a later request's `input`). */
export interface ToolOutput {
  callId: string;
  type: 'function_call_output' | 'custom_tool_call_output';
  /** The output as text (Codex sends a string, or content items whose text parts are joined). */
  output: string;
}

export interface MockModel {
  /** For config.toml: `[model_providers.<id>] base_url = <baseUrl>` (ends with /v1). */
  baseUrl: string;
  requests: ModelRequest[];
  /** Other HTTP requests (method + path) Codex made, answered 404. */
  unexpected: string[];
  /** Appends steps for the next turn(s). */
  push(...steps: MockStep[]): void;
  /** Steps not consumed yet. */
  remaining(): number;
  /** Every tool output Codex has sent back so far, by call id (last wins). */
  toolOutputs(): Map<string, ToolOutput>;
  /** Names of the tools offered in the last request (e.g. to check apply_patch is offered). */
  offeredTools(): string[];
  stop(): Promise<void>;
}

export interface MockModelOptions {
  script?: MockStep[];
  /** Text of the message sent when the script is used up (default "done"). */
  finalText?: string;
}

let callCounter = 0;

function toItem(o: MockOutput, idx: number): Record<string, unknown> {
  const callId = ('callId' in o && o.callId) || `call_${process.pid}_${++callCounter}`;
  if ('exec_command' in o) {
    return { type: 'function_call', id: `fc_${callId}`, call_id: callId, name: 'exec_command',
      arguments: JSON.stringify({ cmd: o.exec_command, ...(o.extra ?? {}) }) };
  }
  if ('apply_patch' in o) {
    return { type: 'custom_tool_call', id: `ctc_${callId}`, call_id: callId, name: 'apply_patch', input: o.apply_patch, status: 'completed' };
  }
  if ('function' in o) {
    return { type: 'function_call', id: `fc_${callId}`, call_id: callId, name: o.function, arguments: JSON.stringify(o.arguments) };
  }
  return { type: 'message', id: `msg_${process.pid}_${++callCounter}_${idx}`, role: 'assistant', status: 'completed',
    content: [{ type: 'output_text', text: o.message, annotations: [] }] };
}

function sse(res: ServerResponse, type: string, payload: Record<string, unknown>): void {
  res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`);
}

function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.map((p) => (p && typeof p.text === 'string' ? p.text : '')).join('');
  if (output && typeof output === 'object' && 'content' in output) return outputText((output as { content: unknown }).content);
  return JSON.stringify(output);
}

/** Starts the mock model on 127.0.0.1 (a free port). */
export async function startMockModel(opts: MockModelOptions = {}): Promise<MockModel> {
  const queue: MockStep[] = [...(opts.script ?? [])];
  let stepNo = 0;
  const requests: ModelRequest[] = [];
  const unexpected: string[] = [];

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const url = req.url ?? '';
    if (req.method !== 'POST' || !/\/responses\/?(\?.*)?$/.test(url)) {
      unexpected.push(`${req.method} ${url}`);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      res.writeHead(400).end('{"error":{"message":"bad json"}}');
      return;
    }
    const step = queue.shift();
    const stepIdx = step === undefined ? -1 : stepNo++;
    requests.push({ path: url, body, step: stepIdx });
    const outputs = step === undefined ? [{ message: opts.finalText ?? 'done' }] : Array.isArray(step) ? step : [step];
    const id = `resp_${process.pid}_${requests.length}`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    sse(res, 'response.created', { response: { id } });
    outputs.forEach((o, i) => {
      const item = toItem(o, i);
      sse(res, 'response.output_item.added', { output_index: i, item });
      sse(res, 'response.output_item.done', { output_index: i, item });
    });
    sse(res, 'response.completed', {
      response: { id, usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 } },
    });
    res.end();
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    unexpected,
    push: (...steps) => void queue.push(...steps),
    remaining: () => queue.length,
    toolOutputs() {
      const m = new Map<string, ToolOutput>();
      for (const r of requests) {
        for (const it of Array.isArray(r.body?.input) ? r.body.input : []) {
          if (it?.type === 'function_call_output' || it?.type === 'custom_tool_call_output') {
            m.set(it.call_id, { callId: it.call_id, type: it.type, output: outputText(it.output) });
          }
        }
      }
      return m;
    },
    offeredTools() {
      const last = requests[requests.length - 1];
      return (last?.body?.tools ?? []).map((t: any) => t?.name ?? t?.type).filter(Boolean);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
