// MailClient's way over the stream door: which HTTP paths it carries (the operation table names
// each path's operation), and when to stop trying it. A socket that cannot be used is passed over
// for that request; once HTTP then answers, the daemon is up without a stream door for us (none,
// `--no-stream`, another user's), and this client stays on HTTP. A daemon's own refusal is an
// answer, never a reason to change doors.
import { ERROR_TABLE, isErrorCode } from '../wire/errors.js';
import { OPERATION_FACTS, OPERATION_NAMES, servedOverBearer } from '../wire/operation-facts.js';
import { StreamUnavailable } from './errors.js';
import { StreamTransport, type Answer, type RequestOptions, type StreamOptions } from './stream-transport.js';

/** The stream's operation for each HTTP path; /mcp is the "mcp" operation (one JSON-RPC message or batch). */
const OP_BY_PATH: ReadonlyMap<string, string> = new Map([...OPERATION_NAMES.filter(servedOverBearer).map((n) => [OPERATION_FACTS[n].path, n] as const), ['/mcp', 'mcp']]);

export const streamOpOf = (path: string): string | undefined => OP_BY_PATH.get(path);

export class StreamRoute {
  readonly transport: StreamTransport;
  private off = false;
  /** A lasting failure seen since HTTP last answered. */
  private suspect = false;

  constructor(o: StreamOptions) {
    this.transport = new StreamTransport(o);
  }

  /** False once this client went over to HTTP for good. */
  get usable(): boolean {
    return !this.off;
  }

  /** The daemon's answer over the stream, or null: send it over HTTP. */
  async exchange(path: string, input: unknown, o: RequestOptions): Promise<Answer | null> {
    const op = this.off ? undefined : OP_BY_PATH.get(path);
    if (!op) return null;
    try {
      const a = await this.transport.exchange(op, input, o);
      this.suspect = false;
      return a;
    } catch (err) {
      if (!(err instanceof StreamUnavailable)) throw err;
      if (err.lasting) this.suspect = true;
      return null;
    }
  }

  /** HTTP answered (any status): a lasting stream failure just before means no stream door for us. */
  httpAnswered(): void {
    if (!this.suspect || this.off) return;
    this.off = true;
    this.transport.close();
  }

  close(): void {
    this.transport.close();
  }
}

/** What POST would have answered: the status of an error's code, and its envelope. */
export function asHttp(path: string, a: Answer): { status: number; text: string } {
  if ('error' in a) {
    const code = a.error.code;
    return { status: isErrorCode(code) ? ERROR_TABLE[code].http : 500, text: JSON.stringify({ error: a.error }) };
  }
  if (path !== '/mcp') return { status: 200, text: JSON.stringify(a.result) };
  const r = a.result as { status?: number; body?: unknown } | null;
  return { status: r?.status ?? 200, text: r?.body === null || r?.body === undefined ? '' : JSON.stringify(r.body) };
}
