// A scripted stand-in for the Anthropic Messages API on loopback, for driving a real Claude Code
// (`ANTHROPIC_BASE_URL=<url>`). It speaks the streaming format Claude Code reads: message_start,
// per content block content_block_start / content_block_delta / content_block_stop, message_delta
// (stop_reason, usage), message_stop. Each request that offers tools takes the next scripted turn;
// requests without tools (titles, summaries, quota checks) get a short text and take none. Every
// request body is recorded, so a test can read the tool_result contents Claude Code sent back.
import type { ServerResponse } from 'node:http';
import { serveModel } from './model-request.js';

/** `input` may be computed from the request that takes the turn (e.g. from a tool result it carries). */
export type AnthropicTurn = { tool: string; input: Record<string, unknown> | ((body: any) => Record<string, unknown>) } | { text: string };

export interface RecordedAnthropicRequest {
  method: string;
  path: string;
  body: any;
  /** The scripted turn this request took (index into the script), or null. */
  turn: number | null;
  /** Date.now() when the request's body had arrived. */
  at: number;
}

export interface ToolExchange {
  /** The tool_use id the script sent. */
  id: string;
  name: string;
  input: unknown;
  /** The tool_result content Claude Code sent back, as text (text blocks joined), or null if none came. */
  result: string | null;
  isError: boolean;
}

export interface ScriptedAnthropic {
  url: string;
  requests: RecordedAnthropicRequest[];
  /** How many scripted turns have not been taken yet. */
  remaining(): number;
  /** Every tool call the script made, with the result that came back in a later request. */
  exchanges(): ToolExchange[];
  /** Names of the tools offered in the requests that took a scripted turn (the last one's list). */
  toolNames(): string[];
  /** Problems seen (a scripted tool not offered, requests after the script ran out). */
  problems: string[];
  close(): Promise<void>;
}

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b: any) => (b?.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('');
  return '';
};

interface Block {
  type: 'text' | 'tool_use';
  text?: string;
  id?: string;
  name?: string;
  input?: Record<string, unknown>;
}

function sse(res: ServerResponse, model: string, blocks: Block[], stopReason: 'tool_use' | 'end_turn'): void {
  const id = `msg_scripted_${Math.random().toString(36).slice(2, 10)}`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': id });
  const send = (event: string, data: unknown): void => void res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  const usage = { input_tokens: 12, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  send('message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage } });
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text ?? '' } });
    } else {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input ?? {}) } });
    }
    send('content_block_stop', { type: 'content_block_stop', index });
  });
  send('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 7 } });
  send('message_stop', { type: 'message_stop' });
  res.end();
}

function json(res: ServerResponse, model: string, blocks: Block[], stopReason: 'tool_use' | 'end_turn'): void {
  const content = blocks.map((b) => (b.type === 'text' ? { type: 'text', text: b.text ?? '' } : { type: 'tool_use', id: b.id, name: b.name, input: b.input ?? {} }));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: `msg_scripted_${Math.random().toString(36).slice(2, 10)}`,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    }),
  );
}

/** Starts the server on 127.0.0.1, port 0. `filler` answers requests that carry no tools. */
export async function startScriptedAnthropic(script: AnthropicTurn[], opts: { filler?: string } = {}): Promise<ScriptedAnthropic> {
  const requests: RecordedAnthropicRequest[] = [];
  const problems: string[] = [];
  let next = 0;
  /** The input each tool turn was answered with (computed ones included). */
  const inputs = new Map<number, Record<string, unknown>>();
  const filler = opts.filler ?? 'Scripted session';

  const server = await serveModel(problems, async (got, res) => {
    const { path, body } = got;
    const rec: RecordedAnthropicRequest = { ...got, turn: null };
    requests.push(rec);
    if (got.method === 'HEAD' || (got.method === 'GET' && path === '/')) {
      res.writeHead(200);
      return void res.end();
    }
    if (got.method === 'POST' && path === '/v1/messages/count_tokens') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ input_tokens: 100 }));
    }
    if (got.method !== 'POST' || path !== '/v1/messages') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `scripted server: no ${got.method} ${path}` } }));
    }
    const model = typeof body?.model === 'string' ? body.model : 'claude-scripted';
    const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
    const reply = body?.stream === false ? json : sse;
    if (tools.length === 0) return reply(res, model, [{ type: 'text', text: filler }], 'end_turn');
    const turn = script[next];
    if (turn === undefined) {
      problems.push(`request ${requests.length} came after the script ran out`);
      return reply(res, model, [{ type: 'text', text: 'The script has run out.' }], 'end_turn');
    }
    rec.turn = next++;
    if ('text' in turn) return reply(res, model, [{ type: 'text', text: turn.text }], 'end_turn');
    if (!tools.some((t) => t?.name === turn.tool)) problems.push(`turn ${rec.turn}: tool ${turn.tool} was not among the ${tools.length} tools offered`);
    const input = typeof turn.input === 'function' ? turn.input(body) : turn.input;
    inputs.set(rec.turn, input);
    reply(res, model, [{ type: 'tool_use', id: `toolu_scripted_${rec.turn}`, name: turn.tool, input }], 'tool_use');
  });

  return {
    url: server.url,
    requests,
    problems,
    remaining: () => script.length - next,
    toolNames() {
      const last = [...requests].reverse().find((r) => r.turn !== null);
      return Array.isArray(last?.body?.tools) ? last.body.tools.map((t: any) => String(t?.name)) : [];
    },
    exchanges() {
      const out: ToolExchange[] = [];
      script.forEach((t, i) => {
        if (!('tool' in t) || i >= next) return;
        out.push({ id: `toolu_scripted_${i}`, name: t.tool, input: inputs.get(i) ?? t.input, result: null, isError: false });
      });
      for (const r of requests) {
        const messages: any[] = Array.isArray(r.body?.messages) ? r.body.messages : [];
        for (const m of messages) {
          if (m?.role !== 'user' || !Array.isArray(m.content)) continue;
          for (const b of m.content) {
            if (b?.type !== 'tool_result') continue;
            const x = out.find((e) => e.id === b.tool_use_id);
            if (x && x.result === null) {
              x.result = textOf(b.content);
              x.isError = b.is_error === true;
            }
          }
        }
      }
      return out;
    },
    close: () => server.close(),
  };
}
