// A real A2A agent for the a2a step's tests, built from the official SDK's server parts
// (DefaultRequestHandler, InMemoryTaskStore, its JSON-RPC transport handler) on a loopback port:
// node:http serves the card and the JSON-RPC endpoint (server-sent events for the streams), and a
// scripted executor plays the agent. Every request is recorded.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentCard, formatSSEErrorEvent, formatSSEEvent, Role, TaskState, type Artifact, type Part, type Task } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
  defaultServerCallContextBuilder,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';

export { TaskState };

export interface Seen {
  messageId: string;
  taskId: string;
  contextId: string;
  /** The remote task the message went into (empty: it started one). */
  intoTask: string;
  text: string;
  metadata: Record<string, unknown> | undefined;
}

export interface Recorded {
  method: string;
  path: string;
  rpc: string | null;
  authorization: string | undefined;
}

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });

/** One turn of the agent (one SendMessage), with helpers that publish on its bus. */
export class Turn {
  constructor(
    readonly rc: RequestContext,
    private readonly bus: ExecutionEventBus,
    private readonly agent: ScriptedAgent,
  ) {}

  get text(): string {
    return this.rc.userMessage.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n');
  }

  /** The first event of every turn: the task (a follow-up turn: the task as it is). */
  task(): void {
    const t: Task = this.rc.task ?? {
      id: this.rc.taskId,
      contextId: this.rc.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [this.rc.userMessage],
      metadata: {},
    };
    this.bus.publish(AgentEvent.task(t));
  }

  status(state: TaskState, said?: string): void {
    const message = said
      ? {
          messageId: randomUUID(),
          contextId: this.rc.contextId,
          taskId: this.rc.taskId,
          role: Role.ROLE_AGENT,
          parts: [text(said)],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        }
      : undefined;
    this.bus.publish(
      AgentEvent.statusUpdate({ taskId: this.rc.taskId, contextId: this.rc.contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined }),
    );
  }

  artifact(a: { text?: string; data?: unknown }): void {
    const parts = [...(a.text !== undefined ? [text(a.text)] : []), ...(a.data !== undefined ? [data(a.data)] : [])];
    const artifact: Artifact = { artifactId: randomUUID(), name: 'result', description: '', parts, metadata: undefined, extensions: [] };
    this.bus.publish(AgentEvent.artifactUpdate({ taskId: this.rc.taskId, contextId: this.rc.contextId, artifact, append: false, lastChunk: true, metadata: undefined }));
  }

  /** An answer without a task. */
  reply(said: string): void {
    this.bus.publish(
      AgentEvent.message({
        messageId: randomUUID(),
        contextId: this.rc.contextId,
        taskId: '',
        role: Role.ROLE_AGENT,
        parts: [text(said)],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      }),
    );
  }

  /** Resolves when the test opens the gate of this name. */
  gate(name: string): Promise<void> {
    return this.agent.gate(name);
  }

  /** Resolves when the task is canceled (CancelTask). */
  canceled(): Promise<void> {
    return this.agent.cancelWait(this.rc.taskId);
  }
}

export type Script = (turn: Turn) => Promise<void>;

export class ScriptedAgent implements AgentExecutor {
  readonly seen: Seen[] = [];
  readonly canceled: string[] = [];
  private gates = new Map<string, { open: () => void; opened: Promise<void> }>();
  private cancels = new Map<string, () => void>();

  constructor(private readonly script: Script) {}

  private gateOf(name: string): { open: () => void; opened: Promise<void> } {
    let g = this.gates.get(name);
    if (!g) {
      let open!: () => void;
      const opened = new Promise<void>((r) => (open = r));
      this.gates.set(name, (g = { open, opened }));
    }
    return g;
  }

  gate(name: string): Promise<void> {
    return this.gateOf(name).opened;
  }

  open(name: string): void {
    this.gateOf(name).open();
  }

  cancelWait(taskId: string): Promise<void> {
    return new Promise((r) => this.cancels.set(taskId, r));
  }

  execute = async (rc: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const turn = new Turn(rc, bus, this);
    this.seen.push({
      messageId: rc.userMessage.messageId,
      taskId: rc.taskId,
      contextId: rc.contextId,
      intoTask: rc.task?.id ?? '',
      text: turn.text,
      metadata: rc.userMessage.metadata,
    });
    await this.script(turn);
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.canceled.push(taskId);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    this.cancels.get(taskId)?.();
  };
}

export interface RemoteAgent {
  /** http://127.0.0.1:PORT */
  base: string;
  cardUrl: string;
  agent: ScriptedAgent;
  requests: Recorded[];
  /** The task as the remote agent keeps it. */
  task(id: string): Promise<Task | undefined>;
  close(): Promise<void>;
}

export interface RemoteAgentOptions {
  streaming?: boolean;
  /** RPC requests without `Authorization: Bearer <token>` are answered 401. */
  token?: string;
  /** The JSON-RPC interface the card names (default: this server's /rpc). */
  interfaceUrl?: (base: string) => string;
  /** Listen on this port (a restart of the agent). */
  port?: number;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

export async function startRemoteAgent(script: Script, o: RemoteAgentOptions = {}): Promise<RemoteAgent> {
  const agent = new ScriptedAgent(script);
  const store = new InMemoryTaskStore();
  const requests: Recorded[] = [];
  let base = '';
  const card = (): AgentCard =>
    AgentCard.fromJSON({
      name: 'remote reviewer',
      description: 'a scripted A2A agent',
      supportedInterfaces: [{ url: o.interfaceUrl ? o.interfaceUrl(base) : `${base}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      version: '1.0.0',
      capabilities: { streaming: o.streaming ?? true, pushNotifications: false },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain', 'application/json'],
      skills: [{ id: 'review', name: 'Review', description: 'reviews', tags: ['review'] }],
    });
  let handler: JsonRpcTransportHandler | null = null;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await readBody(req) : '';
      let rpc: string | null = null;
      let parsed: unknown = null;
      try {
        parsed = body ? JSON.parse(body) : null;
        rpc = (parsed as { method?: string } | null)?.method ?? null;
      } catch {
        /* answered below */
      }
      requests.push({ method: req.method ?? '', path: req.url ?? '', rpc, authorization: req.headers.authorization });
      if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(AgentCard.toJSON(card())));
        return;
      }
      if (req.method !== 'POST' || req.url !== '/rpc' || !parsed) {
        res.statusCode = 404;
        res.end();
        return;
      }
      if (o.token && req.headers.authorization !== `Bearer ${o.token}`) {
        res.statusCode = 401;
        res.end('no');
        return;
      }
      handler ??= new JsonRpcTransportHandler(new DefaultRequestHandler(card(), store, agent));
      const context = defaultServerCallContextBuilder({ extensions: undefined, user: new UnauthenticatedUser(), headers: req.headers, requestedVersion: '1.0' });
      const out = await handler.handle(parsed as Record<string, unknown>, context);
      const id = (parsed as { id?: unknown }).id ?? null;
      if (out && typeof (out as AsyncGenerator)[Symbol.asyncIterator] === 'function') {
        const it = (out as AsyncGenerator<unknown>)[Symbol.asyncIterator]();
        let first: IteratorResult<unknown>;
        try {
          first = await it.next();
        } catch (err) {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }));
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        try {
          for (let r = first; !r.done; r = await it.next()) res.write(formatSSEEvent(r.value));
        } catch (err) {
          res.write(formatSSEErrorEvent({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }));
        }
        res.end();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(out));
    })().catch(() => {
      res.statusCode = 500;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(o.port ?? 0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    cardUrl: `${base}/.well-known/agent-card.json`,
    agent,
    requests,
    task: (id) => store.load(id, defaultServerCallContextBuilder({ extensions: undefined, user: new UnauthenticatedUser(), headers: {} })),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
