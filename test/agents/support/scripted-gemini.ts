// A scripted stand-in for the Gemini API on loopback, for driving a real Gemini CLI
// (`GOOGLE_GEMINI_BASE_URL=<url>`, `GEMINI_API_KEY=x`, `-m <model>` so no routing call comes first;
// shared/AGENT-INTEGRATIONS.md §11). It answers `POST /v1beta/models/<model>:streamGenerateContent`
// (`?alt=sse`) with one SSE event carrying a text part or a functionCall part, finishReason STOP.
// Each such request that offers function declarations takes the next scripted turn (the same turns
// as scripted-openai.ts); any other generateContent call (a routing or next-speaker check, a title)
// gets a short answer and takes none. Every request is recorded with its arrival time, so a test
// can read the user turns the model saw and the functionResponse that came back for each call.
//
//   const model = await startScriptedGemini([{ tool: geminiTool('m4a_mail_whoami'), input: {} }, { text: 'done' }]);
//   gemini -p "…" -m gemini-2.5-flash   with GOOGLE_GEMINI_BASE_URL=model.url, GEMINI_API_KEY=x
//   model.exchanges()[0].output  // the whoami result text; model.requests[i].at, userTexts(body)
import type { ServerResponse } from 'node:http';
import { serveModel } from './model-request.js';
import type { CallExchange, OpenAITurn } from './scripted-openai.js';

export type GeminiTurn = OpenAITurn & {
  /** Run when this turn's request arrives, and answer only once it settles (a gate that starts
   *  then: e.g. send mail while the model "writes" its answer). */
  onRequest?: () => Promise<unknown>;
};

export interface RecordedGeminiRequest {
  method: string;
  /** The path without the query, e.g. /v1beta/models/gemini-2.5-flash:streamGenerateContent. */
  path: string;
  body: any;
  /** The scripted turn this request took (index into the script), or null. */
  turn: number | null;
  /** Date.now() when the request's body had arrived. */
  at: number;
}

export interface ScriptedGemini {
  /** http://127.0.0.1:PORT: Gemini CLI's GOOGLE_GEMINI_BASE_URL. */
  url: string;
  requests: RecordedGeminiRequest[];
  /** How many scripted turns have not been taken yet. */
  remaining(): number;
  /** Every functionCall the script made, with the functionResponse that came back as text. */
  exchanges(): CallExchange[];
  /** Function names offered in the last request that took a scripted turn. */
  toolNames(): string[];
  /** Problems seen (a scripted tool not offered, requests after the script ran out). */
  problems: string[];
  close(): Promise<void>;
}

/** Gemini CLI's name for one of our MCP tools: `mcp_<server>_<tool>` (the server is `m4a`). */
export const geminiTool =
  (tool: string) =>
  (names: string[]): string | undefined =>
    names.find((n) => n === `mcp_m4a_${tool}` || n.endsWith(`_${tool}`));

/** Names of the function declarations offered in a generateContent request. */
export function geminiToolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools
    .flatMap((t: any) => (Array.isArray(t?.functionDeclarations) ? t.functionDeclarations.map((d: any) => d?.name) : []))
    .filter((n): n is string => typeof n === 'string');
}

/** The texts of a request's user turns, in order (text parts of each joined; hook context and a
 *  hook's reason arrive as user text). */
export const geminiUserTexts = (body: any): string[] =>
  (Array.isArray(body?.contents) ? body.contents : [])
    .filter((c: any) => c?.role === 'user')
    .map((c: any) => (Array.isArray(c.parts) ? c.parts.map((p: any) => (typeof p?.text === 'string' ? p.text : '')).join('') : ''))
    .filter((t: string) => t !== '');

/** A functionResponse's content as text: MCP tools answer `{content: [{type: 'text', text}]}` or `{output}`. */
function responseText(r: unknown): string {
  if (typeof r === 'string') return r;
  const o = r as any;
  if (typeof o?.output === 'string') return o.output;
  if (Array.isArray(o?.content)) return o.content.map((p: any) => (typeof p?.text === 'string' ? p.text : '')).join('');
  if (typeof o?.error === 'string') return o.error;
  return JSON.stringify(r);
}

type Part = { text: string } | { functionCall: { id: string; name: string; args: unknown } };

const USAGE = { promptTokenCount: 12, candidatesTokenCount: 7, totalTokenCount: 19 };

function answer(res: ServerResponse, stream: boolean, model: string, part: Part): void {
  const payload = { candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }], usageMetadata: USAGE, modelVersion: model };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end(JSON.stringify(payload));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(`data: ${JSON.stringify(payload)}\r\n\r\n`);
}

/** A request asking for JSON (routing, next-speaker checks): an object that satisfies the ones
 *  Gemini CLI makes, handing the turn back to the user. */
const JSON_FILLER = JSON.stringify({ reasoning: 'scripted', next_speaker: 'user', complexity_reasoning: 'scripted', complexity_score: 1 });

export async function startScriptedGemini(script: GeminiTurn[], opts: { filler?: string } = {}): Promise<ScriptedGemini> {
  const requests: RecordedGeminiRequest[] = [];
  const problems: string[] = [];
  const calls: CallExchange[] = [];
  let next = 0;
  const filler = opts.filler ?? 'Scripted session';

  const server = await serveModel(problems, async (got, res) => {
    const rec: RecordedGeminiRequest = { ...got, turn: null };
    requests.push(rec);
    const m = /^\/v1(?:beta)?\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/.exec(got.path);
    if (got.method !== 'POST' || !m) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: { code: 404, message: `scripted server: no ${got.method} ${got.path}`, status: 'NOT_FOUND' } }));
    }
    const [, model = 'scripted', method] = m;
    const body = got.body;
    if (method === 'countTokens') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ totalTokens: 12 }));
    }
    const stream = method === 'streamGenerateContent';
    const names = geminiToolNames(body?.tools);
    const wantsJson = body?.generationConfig?.responseJsonSchema !== undefined || body?.generationConfig?.responseMimeType === 'application/json';
    if (!stream || names.length === 0) return answer(res, stream, model, { text: wantsJson ? JSON_FILLER : filler });
    const turn = script[next];
    if (turn === undefined) {
      problems.push(`request ${requests.length} came after the script ran out`);
      return answer(res, stream, model, { text: 'The script has run out.' });
    }
    rec.turn = next++;
    if (turn.gate) await turn.gate.catch(() => {});
    if (turn.onRequest) await turn.onRequest().catch((err: unknown) => problems.push(`turn ${rec.turn}: onRequest failed: ${String(err)}`));
    if ('text' in turn) return answer(res, stream, model, { text: turn.text });
    const name = typeof turn.tool === 'function' ? turn.tool(names) : turn.tool;
    if (name === undefined || !names.includes(name)) problems.push(`turn ${rec.turn}: tool ${String(name)} was not among the offered ${names.join(', ')}`);
    const callId = `call_scripted_${rec.turn}`;
    const input = typeof turn.input === 'function' ? turn.input(body) : turn.input;
    calls.push({ callId, name: name ?? 'missing_tool', input, output: null });
    answer(res, stream, model, { functionCall: { id: callId, name: name ?? 'missing_tool', args: input } });
  });

  return {
    url: server.url,
    requests,
    problems,
    remaining: () => script.length - next,
    toolNames() {
      const last = [...requests].reverse().find((r) => r.turn !== null);
      return geminiToolNames(last?.body?.tools);
    },
    exchanges() {
      const out = calls.map((c) => ({ ...c }));
      for (const r of requests) {
        for (const c of Array.isArray(r.body?.contents) ? r.body.contents : []) {
          for (const p of Array.isArray(c?.parts) ? c.parts : []) {
            const fr = p?.functionResponse;
            if (!fr) continue;
            // By the id we gave the call, else the first open call of that name.
            const x = out.find((e) => e.output === null && e.callId === fr.id) ?? out.find((e) => e.output === null && fr.id === undefined && e.name === fr.name);
            if (x) x.output = responseText(fr.response);
          }
        }
      }
      return out;
    },
    close: () => server.close(),
  };
}
