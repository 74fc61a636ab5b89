// A tiny stand-in that speaks the stream door's framing (docs/protocol.md) over a Unix socket, for
// protocol tests of the client: what the client sends and how it takes answers in any order,
// errors, closes and pushed events. The real daemon is tested in test/stream-client.test.ts.
import { createServer, type Server, type Socket } from 'node:net';

export interface Frame {
  id: number | string | null;
  op: string;
  input: Record<string, unknown>;
  agent_session?: string;
}

/** What a handler answers: a result, an error object, or nothing yet (it answers later with `answer`). */
export type Reply = { result: unknown } | { error: Record<string, unknown> } | 'later';

export class StreamFake {
  readonly frames: Frame[] = [];
  readonly conns = new Set<Socket>();
  hellos = 0;
  /** Per op; the default answers {op, input}. */
  handlers: Record<string, (f: Frame, conn: Socket) => Reply> = {};
  private server: Server;

  constructor(
    readonly path: string,
    readonly token = 'secret-1',
  ) {
    this.server = createServer((c) => this.onConn(c));
  }

  listen(): Promise<void> {
    return new Promise((r) => this.server.listen(this.path, r));
  }

  answer(conn: Socket, id: Frame['id'], reply: Exclude<Reply, 'later'>): void {
    conn.write(`${JSON.stringify({ id, ...reply })}\n`);
  }

  push(line: unknown): void {
    for (const c of this.conns) c.write(`${JSON.stringify(line)}\n`);
  }

  ops(): string[] {
    return this.frames.map((f) => f.op);
  }

  /** Ends every connection (as a daemon going away does); the socket file stays. */
  dropAll(): void {
    for (const c of this.conns) c.destroy();
  }

  close(): Promise<void> {
    this.dropAll();
    return new Promise((r) => this.server.close(() => r()));
  }

  private onConn(c: Socket): void {
    this.conns.add(c);
    c.on('close', () => this.conns.delete(c));
    c.on('error', () => undefined);
    let authed = false;
    let buf = '';
    c.on('data', (chunk: Buffer) => {
      buf += chunk.toString('utf8');
      for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let f: Frame;
        try {
          f = JSON.parse(line) as Frame;
        } catch {
          this.answer(c, null, { error: { code: 'malformed', message: 'not JSON', field: 'line' } });
          continue;
        }
        this.frames.push(f);
        if (f.op === 'hello') {
          this.hellos++;
          if (f.input.token !== this.token) {
            this.answer(c, f.id, { error: { code: 'unauthenticated', message: 'no such secret' } });
            continue;
          }
          authed = true;
          this.answer(c, f.id, { result: { account: 'claude', session: 's-1', version: 'fake', max_in_flight: 64, max_line_bytes: 4096 } });
          continue;
        }
        if (!authed) {
          this.answer(c, f.id, { error: { code: 'unauthenticated', message: 'hello first' } });
          continue;
        }
        const h = this.handlers[f.op];
        const reply = h ? h(f, c) : { result: { op: f.op, input: f.input } };
        if (reply !== 'later') this.answer(c, f.id, reply);
      }
    });
  }
}
