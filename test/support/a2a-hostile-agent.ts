// A hostile A2A agent for the a2a step's tests: a plain node:http server on loopback (no SDK, so it
// can say what a real agent never would) that serves a streaming card naming its JSON-RPC endpoint
// and hands each JSON-RPC call to the test, with helpers that answer in A2A 1.0's JSON form: a
// result, or an event stream (SSE) written at the pace the client reads it. Every call and every
// stream (bytes written, when the client closed it) is recorded.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TASK_ID = 'hostile-task';
export const CONTEXT_ID = 'hostile-context';

type State = 'SUBMITTED' | 'WORKING' | 'INPUT_REQUIRED' | 'COMPLETED';

const message = (text: string) => ({ messageId: `said-${text.length}-${Date.now()}`, contextId: CONTEXT_ID, taskId: TASK_ID, role: 'ROLE_AGENT', parts: [{ text }] });
const status = (state: State, text?: string) => ({ state: `TASK_STATE_${state}`, ...(text !== undefined ? { message: message(text) } : {}) });

/** StreamResponse results, as JSON. */
export const results = {
  task: (state: State, artifacts: unknown[] = []) => ({ task: { id: TASK_ID, contextId: CONTEXT_ID, status: status(state), artifacts } }),
  status: (state: State, text?: string) => ({ statusUpdate: { taskId: TASK_ID, contextId: CONTEXT_ID, status: status(state, text) } }),
  appendText: (artifactId: string, text: string) => ({
    artifactUpdate: { taskId: TASK_ID, contextId: CONTEXT_ID, artifact: { artifactId, parts: [{ text, mediaType: 'text/plain' }] }, append: true },
  }),
};

export interface Stream {
  method: string;
  openedAt: number;
  /** When the client closed it (or the test ended it), null while open. */
  closedAt: number | null;
  bytes: number;
}

/** One event-stream answer. */
export class Sse {
  readonly stream: Stream;
  constructor(
    private readonly res: ServerResponse,
    private readonly id: unknown,
    method: string,
    streams: Stream[],
  ) {
    this.stream = { method, openedAt: Date.now(), closedAt: null, bytes: 0 };
    streams.push(this.stream);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.on('close', () => (this.stream.closedAt ??= Date.now()));
  }

  get open(): boolean {
    return this.stream.closedAt === null;
  }

  /** The bytes of one event carrying `result`, to write once or many times. */
  frame(result: unknown): Buffer {
    return Buffer.from(`data: ${JSON.stringify({ jsonrpc: '2.0', id: this.id, result })}\n\n`);
  }

  /** Writes bytes, waiting while the client is behind; false once it closed the stream. */
  async write(bytes: Buffer | string): Promise<boolean> {
    if (!this.open) return false;
    this.stream.bytes += bytes.length;
    if (!this.res.write(bytes) && this.open)
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.res.off('drain', done).off('close', done);
          resolve();
        };
        this.res.on('drain', done).on('close', done);
      });
    return this.open;
  }

  event(result: unknown): Promise<boolean> {
    return this.write(this.frame(result));
  }

  end(): void {
    this.res.end();
  }
}

export interface Call {
  method: string;
  id: unknown;
  req: IncomingMessage;
  res: ServerResponse;
  /** Starts an event stream. */
  sse(): Sse;
  /** Answers with one JSON-RPC result. */
  result(result: unknown): void;
}

export interface HostileAgent {
  cardUrl: string;
  calls: Array<{ method: string; at: number }>;
  cardReads: number;
  streams: Stream[];
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

export async function startHostileAgent(handle: (call: Call) => Promise<void>): Promise<HostileAgent> {
  const calls: HostileAgent['calls'] = [];
  const streams: Stream[] = [];
  let base = '';
  const agent: HostileAgent = { cardUrl: '', calls, cardReads: 0, streams, close: async () => {} };
  const server = createServer((req, res) => {
    void (async () => {
      if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
        agent.cardReads++;
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            name: 'hostile',
            description: 'says what a real agent never would',
            supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
            version: '1.0.0',
            capabilities: { streaming: true },
            defaultInputModes: ['text/plain'],
            defaultOutputModes: ['text/plain'],
            skills: [],
          }),
        );
        return;
      }
      const body = JSON.parse(await readBody(req)) as { method: string; id: unknown };
      calls.push({ method: body.method, at: Date.now() });
      await handle({
        method: body.method,
        id: body.id,
        req,
        res,
        sse: () => new Sse(res, body.id, body.method, streams),
        result: (result) => {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
        },
      });
    })().catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  agent.cardUrl = `${base}/.well-known/agent-card.json`;
  agent.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return agent;
}
