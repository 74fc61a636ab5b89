// A scripted stand-in for the OpenAI Responses API on loopback, for driving a real Codex CLI through
// a custom model provider (`base_url = "<url>/v1"`, `wire_api = "responses"`). It answers
// `POST /v1/responses` with the event stream Codex reads: response.created,
// response.output_item.added, response.output_text.delta or response.function_call_arguments.delta,
// response.output_item.done, response.completed (with usage). Each request that offers tools takes
// the next scripted turn; one without tools gets a short text and takes none. Every request body is
// recorded, so a test can read the function_call_output that came back for each call.
import type { ServerResponse } from 'node:http';
import { serveModel } from './model-request.js';

/** `tool` is a function name as offered in the request's `tools`, or a function that picks it. */
/** `input` may be computed from the request that takes the turn (e.g. from a tool output it carries). */
export type OpenAITurn = (
  { tool: string | ((names: string[]) => string | undefined); input: Record<string, unknown> | ((body: any) => Record<string, unknown>) } | { text: string }
) & {
  /** Hold this answer until the promise settles (keeps the agent's turn running meanwhile). */
  gate?: Promise<unknown>;
};

export interface RecordedOpenAIRequest {
  method: string;
  path: string;
  body: any;
  turn: number | null;
  /** Date.now() when the request's body had arrived. */
  at: number;
}

export interface CallExchange {
  callId: string;
  name: string;
  input: unknown;
  /** The function_call_output Codex sent back, as text, or null if none came. */
  output: string | null;
}

export interface ScriptedOpenAI {
  url: string;
  requests: RecordedOpenAIRequest[];
  remaining(): number;
  exchanges(): CallExchange[];
  /** Function names offered in the last request that took a scripted turn. */
  toolNames(): string[];
  problems: string[];
  /** How many times the script waited (see `whileMissing`). */
  waits(): number;
  close(): Promise<void>;
}

export interface ScriptedOpenAIOptions {
  /** The answer to a request that offers no tools. */
  filler?: string;
  /** While the next scripted tool is not offered yet (Codex does not wait for stdio MCP servers
   *  that are still starting before its first request), call this tool instead, at most `max`
   *  times, without taking a scripted turn: e.g. exec_command with `sleep 1`. */
  whileMissing?: { tool: string; input: Record<string, unknown>; max: number };
}

/** Names of the function tools in a Responses request: plain functions, and the functions inside a
 *  namespace tool (if the client groups MCP tools that way), as `namespace.name` and bare. */
export function offeredNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  const out: string[] = [];
  for (const t of tools) {
    if (typeof t?.name === 'string') out.push(t.name);
    if (Array.isArray(t?.tools)) for (const inner of t.tools) if (typeof inner?.name === 'string') out.push(inner.name);
  }
  return out;
}

const outputText = (o: unknown): string => {
  if (typeof o === 'string') return o;
  if (Array.isArray(o)) return o.map((p: any) => (typeof p?.text === 'string' ? p.text : '')).join('');
  if (o && typeof o === 'object' && typeof (o as any).content === 'string') return (o as any).content;
  return JSON.stringify(o);
};

type Item = { type: 'message'; text: string } | { type: 'function_call'; callId: string; name: string; namespace?: string; args: string };

/** The namespace tool that holds a function of this name, if the name is not a top-level tool. */
export function namespaceOf(tools: unknown, name: string): string | undefined {
  if (!Array.isArray(tools)) return undefined;
  if (tools.some((t) => t?.name === name && !Array.isArray(t?.tools))) return undefined;
  for (const t of tools) if (Array.isArray(t?.tools) && t.tools.some((i: any) => i?.name === name)) return String(t.name);
  return undefined;
}

function stream(res: ServerResponse, model: string, item: Item): void {
  const rid = `resp_scripted_${Math.random().toString(36).slice(2, 10)}`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  const send = (type: string, data: Record<string, unknown>): void => void res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  const base = { id: rid, object: 'response', created_at: Math.floor(Date.now() / 1000), model, status: 'in_progress', output: [] as unknown[] };
  send('response.created', { response: base });
  let done: Record<string, unknown>;
  if (item.type === 'message') {
    const id = `msg_scripted_${seq}`;
    send('response.output_item.added', { output_index: 0, item: { id, type: 'message', role: 'assistant', status: 'in_progress', content: [] } });
    send('response.content_part.added', { item_id: id, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
    send('response.output_text.delta', { item_id: id, output_index: 0, content_index: 0, delta: item.text });
    send('response.output_text.done', { item_id: id, output_index: 0, content_index: 0, text: item.text });
    done = { id, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: item.text, annotations: [] }] };
  } else {
    const id = `fc_scripted_${seq}`;
    const ns = item.namespace !== undefined ? { namespace: item.namespace } : {};
    send('response.output_item.added', {
      output_index: 0,
      item: { id, type: 'function_call', status: 'in_progress', call_id: item.callId, name: item.name, ...ns, arguments: '' },
    });
    send('response.function_call_arguments.delta', { item_id: id, output_index: 0, delta: item.args });
    send('response.function_call_arguments.done', { item_id: id, output_index: 0, arguments: item.args });
    done = { id, type: 'function_call', status: 'completed', call_id: item.callId, name: item.name, ...ns, arguments: item.args };
  }
  send('response.output_item.done', { output_index: 0, item: done });
  const usage = { input_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 19 };
  send('response.completed', { response: { ...base, status: 'completed', output: [done], usage } });
  res.end();
}

export async function startScriptedOpenAI(script: OpenAITurn[], opts: ScriptedOpenAIOptions = {}): Promise<ScriptedOpenAI> {
  const requests: RecordedOpenAIRequest[] = [];
  const problems: string[] = [];
  const calls: CallExchange[] = [];
  let next = 0;
  let waits = 0;
  const filler = opts.filler ?? 'Scripted session';

  const server = await serveModel(problems, async (got, res) => {
    const { path, body } = got;
    const rec: RecordedOpenAIRequest = { ...got, turn: null };
    requests.push(rec);
    if (got.method === 'HEAD' || (got.method === 'GET' && path === '/')) {
      res.writeHead(200);
      return void res.end();
    }
    if (got.method !== 'POST' || path !== '/v1/responses') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: { message: `scripted server: no ${got.method} ${path}`, type: 'not_found' } }));
    }
    const model = typeof body?.model === 'string' ? body.model : 'scripted';
    const names = offeredNames(body?.tools);
    if (names.length === 0) return stream(res, model, { type: 'message', text: filler });
    const turn = script[next];
    if (turn === undefined) {
      problems.push(`request ${requests.length} came after the script ran out`);
      return stream(res, model, { type: 'message', text: 'The script has run out.' });
    }
    const name = 'text' in turn ? undefined : typeof turn.tool === 'function' ? turn.tool(names) : turn.tool;
    const wait = opts.whileMissing;
    if (!('text' in turn) && (name === undefined || !names.includes(name)) && wait && waits < wait.max && names.includes(wait.tool)) {
      waits++;
      return stream(res, model, { type: 'function_call', callId: `call_wait_${waits}`, name: wait.tool, args: JSON.stringify(wait.input) });
    }
    rec.turn = next++;
    if (turn.gate) await turn.gate.catch(() => {});
    if ('text' in turn) return stream(res, model, { type: 'message', text: turn.text });
    if (name === undefined || !names.includes(name)) problems.push(`turn ${rec.turn}: tool ${String(name)} was not among the offered ${names.join(', ')}`);
    const callId = `call_scripted_${rec.turn}`;
    const input = typeof turn.input === 'function' ? turn.input(body) : turn.input;
    calls.push({ callId, name: name ?? 'missing_tool', input, output: null });
    const namespace = name === undefined ? undefined : namespaceOf(body?.tools, name);
    stream(res, model, { type: 'function_call', callId, name: name ?? 'missing_tool', ...(namespace !== undefined ? { namespace } : {}), args: JSON.stringify(input) });
  });

  return {
    url: server.url,
    requests,
    problems,
    remaining: () => script.length - next,
    waits: () => waits,
    toolNames() {
      const last = [...requests].reverse().find((r) => r.turn !== null);
      return offeredNames(last?.body?.tools);
    },
    exchanges() {
      const out = calls.map((c) => ({ ...c }));
      for (const r of requests) {
        const input: any[] = Array.isArray(r.body?.input) ? r.body.input : [];
        for (const it of input) {
          if (it?.type !== 'function_call_output') continue;
          const x = out.find((c) => c.callId === it.call_id);
          if (x && x.output === null) x.output = outputText(it.output);
        }
      }
      return out;
    },
    close: () => server.close(),
  };
}
