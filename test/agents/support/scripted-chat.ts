// A scripted stand-in for the OpenAI Chat Completions API on loopback, for driving a real pi or omp
// through a custom provider (`api: openai-completions`, `baseUrl: <url>/v1`, see pi-omp.ts). It
// answers `POST /v1/chat/completions` with the stream both read: `chat.completion.chunk`s carrying
// a text delta, or a tool call (id and name first, then its arguments), then a chunk with
// finish_reason (stop or tool_calls), a usage chunk, and `data: [DONE]` (one chat.completion when
// the request does not ask for a stream). Each request that offers
// tools takes the next scripted turn (the same turns as scripted-openai.ts); one without tools (a
// title, a summary) gets a short text and takes none. Every request is recorded with its arrival
// time, so a test can read the user turns the model saw and the tool results that came back.
import type { ServerResponse } from 'node:http';
import { serveModel } from './model-request.js';
import type { CallExchange, OpenAITurn } from './scripted-openai.js';

export type ChatTurn = OpenAITurn;

export interface RecordedChatRequest {
  method: string;
  path: string;
  body: any;
  /** The scripted turn this request took (index into the script), or null. */
  turn: number | null;
  /** Date.now() when the request's body had arrived. */
  at: number;
}

export interface ScriptedChat {
  /** http://127.0.0.1:PORT (the provider's baseUrl is this plus /v1). */
  url: string;
  requests: RecordedChatRequest[];
  /** How many scripted turns have not been taken yet. */
  remaining(): number;
  /** Every tool call the script made, with the tool message that came back in a later request. */
  exchanges(): CallExchange[];
  /** Function names offered in the last request that took a scripted turn. */
  toolNames(): string[];
  /** Problems seen (a scripted tool not offered, requests after the script ran out). */
  problems: string[];
  close(): Promise<void>;
}

/** Names of the function tools in a chat completions request. */
export function chatToolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((t: any) => t?.function?.name).filter((n): n is string => typeof n === 'string');
}

/** A message's content as text: a string, or the text parts of an array joined. */
export const contentText = (c: unknown): string => {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p: any) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
};

/** The texts of a request's user messages, in order (an injected message arrives as one). */
export const userTexts = (body: any): string[] =>
  (Array.isArray(body?.messages) ? body.messages : []).filter((m: any) => m?.role === 'user').map((m: any) => contentText(m.content));

type Answer = { text: string } | { callId: string; name: string; args: string };

const USAGE = { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 };

/** The answer as one chat.completion, for a request that did not ask for a stream. */
function whole(res: ServerResponse, model: string, answer: Answer, id: string, created: number): void {
  const message =
    'text' in answer
      ? { role: 'assistant', content: answer.text }
      : { role: 'assistant', content: null, tool_calls: [{ id: answer.callId, type: 'function', function: { name: answer.name, arguments: answer.args } }] };
  const choice = { index: 0, message, finish_reason: 'text' in answer ? 'stop' : 'tool_calls' };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ id, object: 'chat.completion', created, model, choices: [choice], usage: USAGE }));
}

function respond(res: ServerResponse, body: any, answer: Answer): void {
  const model = typeof body?.model === 'string' ? body.model : 'scripted';
  const id = `chatcmpl-scripted-${Math.random().toString(36).slice(2, 10)}`;
  const created = Math.floor(Date.now() / 1000);
  if (body?.stream !== true) return whole(res, model, answer, id, created);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): void =>
    void res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`);
  const delta = (d: Record<string, unknown>, finish: string | null = null): void => chunk([{ index: 0, delta: d, finish_reason: finish }]);
  if ('text' in answer) {
    delta({ role: 'assistant', content: '' });
    delta({ content: answer.text });
    delta({}, 'stop');
  } else {
    delta({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: answer.callId, type: 'function', function: { name: answer.name, arguments: '' } }] });
    delta({ tool_calls: [{ index: 0, function: { arguments: answer.args } }] });
    delta({}, 'tool_calls');
  }
  chunk([], { usage: USAGE });
  res.end('data: [DONE]\n\n');
}

export async function startScriptedChat(script: ChatTurn[], opts: { filler?: string } = {}): Promise<ScriptedChat> {
  const requests: RecordedChatRequest[] = [];
  const problems: string[] = [];
  const calls: CallExchange[] = [];
  let next = 0;
  const filler = opts.filler ?? 'Scripted session';

  const server = await serveModel(problems, async (got, res) => {
    const { path, body } = got;
    const rec: RecordedChatRequest = { ...got, turn: null };
    requests.push(rec);
    if (got.method === 'HEAD' || (got.method === 'GET' && path === '/')) {
      res.writeHead(200);
      return void res.end();
    }
    if (got.method === 'GET' && path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ object: 'list', data: [{ id: 'scripted', object: 'model', created: 0, owned_by: 'scripted' }] }));
    }
    if (got.method !== 'POST' || path !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: { message: `scripted server: no ${got.method} ${path}`, type: 'not_found' } }));
    }
    const names = chatToolNames(body?.tools);
    if (names.length === 0) return respond(res, body, { text: filler });
    const turn = script[next];
    if (turn === undefined) {
      problems.push(`request ${requests.length} came after the script ran out`);
      return respond(res, body, { text: 'The script has run out.' });
    }
    rec.turn = next++;
    if (turn.gate) await turn.gate.catch(() => {});
    if ('text' in turn) return respond(res, body, { text: turn.text });
    const name = typeof turn.tool === 'function' ? turn.tool(names) : turn.tool;
    if (name === undefined || !names.includes(name)) problems.push(`turn ${rec.turn}: tool ${String(name)} was not among the offered ${names.join(', ')}`);
    const callId = `call_scripted_${rec.turn}`;
    const input = typeof turn.input === 'function' ? turn.input(body) : turn.input;
    calls.push({ callId, name: name ?? 'missing_tool', input, output: null });
    respond(res, body, { callId, name: name ?? 'missing_tool', args: JSON.stringify(input) });
  });

  return {
    url: server.url,
    requests,
    problems,
    remaining: () => script.length - next,
    toolNames() {
      const last = [...requests].reverse().find((r) => r.turn !== null);
      return chatToolNames(last?.body?.tools);
    },
    exchanges() {
      const out = calls.map((c) => ({ ...c }));
      for (const r of requests) {
        for (const m of Array.isArray(r.body?.messages) ? r.body.messages : []) {
          if (m?.role !== 'tool') continue;
          const x = out.find((c) => c.callId === m.tool_call_id);
          if (x && x.output === null) x.output = contentText(m.content);
        }
      }
      return out;
    },
    close: () => server.close(),
  };
}
