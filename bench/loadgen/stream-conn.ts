// The load generator's stream door: raw JSON lines over net.connect to the daemon's Unix socket
// (docs/protocol.md, the stream door), with no client library in between, as http.ts is raw
// node:http. One object per line each way; requests carry ids and are answered in any order;
// `mail` events arrive unasked once the connection has subscribed.
import { connect, type Socket } from 'node:net';

export interface StreamError {
  code: string;
  message: string;
  [k: string]: unknown;
}

export interface MailEvent {
  event: 'mail';
  cursor: string;
  messages: { message_id: string }[];
  more?: boolean;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout | null;
}

export class StreamConn {
  private buf = '';
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closed: Error | null = null;
  /** Called for every `mail` event, with the time it was read. */
  onMail: ((e: MailEvent, at: bigint) => void) | null = null;

  private constructor(private readonly sock: Socket) {
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => this.read(chunk));
    sock.on('error', (e) => this.fail(e));
    sock.on('close', () => this.fail(new Error('the stream connection closed')));
  }

  /** Connects and says hello (not timed by any caller); rejects on a refused hello. */
  static async open(path: string, token: string, client = 'm4a-bench'): Promise<StreamConn> {
    const sock = connect(path);
    await new Promise<void>((resolve, reject) => {
      sock.once('connect', resolve);
      sock.once('error', reject);
    });
    sock.setNoDelay?.(true);
    const c = new StreamConn(sock);
    await c.call('hello', { token, client });
    return c;
  }

  /** One request; resolves with its `result`, rejects with its refusal (code first). */
  call<T = unknown>(op: string, input: unknown, timeoutMs = 120_000): Promise<T> {
    if (this.closed) return Promise.reject(this.closed);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = timeoutMs > 0 ? setTimeout(() => this.settle(id, new Error(`${op}: no answer within ${timeoutMs} ms`)), timeoutMs) : null;
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.sock.write(`${JSON.stringify({ id, op, input })}\n`);
    });
  }

  close(): void {
    this.sock.destroy();
  }

  get inFlight(): number {
    return this.pending.size;
  }

  private read(chunk: string): void {
    this.buf += chunk;
    let i: number;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      if (line.length === 0) continue;
      const at = process.hrtime.bigint();
      const f = JSON.parse(line) as { id?: number | null; result?: unknown; error?: StreamError; event?: string };
      if (f.event === 'mail') {
        this.onMail?.(f as MailEvent, at);
        continue;
      }
      if (typeof f.id !== 'number') {
        this.fail(new Error(`stream door: ${f.error?.code ?? 'unexpected frame'} ${f.error?.message ?? line.slice(0, 200)}`));
        continue;
      }
      this.settle(f.id, f.error ? Object.assign(new Error(`${f.error.code}: ${f.error.message}`), { code: f.error.code }) : null, f.result);
    }
  }

  private settle(id: number, err: Error | null, result?: unknown): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (p.timer) clearTimeout(p.timer);
    if (err) p.reject(err);
    else p.resolve(result);
  }

  private fail(e: Error): void {
    this.closed ??= e;
    for (const id of [...this.pending.keys()]) this.settle(id, e);
  }
}

/** Opens `n` hello'd connections, at most `wave` connecting at once (the door bounds connections
 *  that have not said hello, 256). `token(i)` names each one's credential. */
export async function openMany(path: string, n: number, token: (i: number) => string, wave = 200, onOpen?: (done: number) => void): Promise<StreamConn[]> {
  const out: StreamConn[] = [];
  for (let i = 0; i < n; i += wave) {
    const batch = await Promise.all(Array.from({ length: Math.min(wave, n - i) }, (_, j) => StreamConn.open(path, token(i + j))));
    out.push(...batch);
    onOpen?.(out.length);
  }
  return out;
}
