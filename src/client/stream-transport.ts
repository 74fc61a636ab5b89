// The stream door's client (docs/protocol.md): one Unix socket connection to the daemon, JSON
// lines both ways, hello once per connection, requests with ids answered in any order, and pushed
// `mail` events for a subscription. Connects on first use and again after the daemon restarts;
// the secret goes out only after the socket file proved to be ours.
import { lstatSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { MailError, errorFromBody } from '../wire/errors.js';
import type { MessageOut } from '../wire/ops.js';
import { DaemonUnreachable, StreamUnavailable } from './errors.js';

export interface StreamOptions {
  /** The daemon's m4a.sock. */
  path: string;
  token: string;
  /** Sent in hello (name/version, at most 64 characters). */
  clientName?: string;
  /** Never keep the process alive, not even for a request in flight or a subscription. */
  unref?: boolean;
  /** How long connecting and hello may take. Default 30 s. */
  timeoutMs?: number;
}

export interface StreamHello {
  account: string;
  session: string | null;
  version: string;
  max_in_flight: number;
  max_line_bytes: number;
}

/** Mail this session may read committed after the previous cursor (inbox items without bodies). */
export interface MailEvent {
  event: 'mail';
  cursor: string;
  messages: MessageOut[];
  /** Further messages follow these: read them with inbox {after: cursor}. */
  more?: true;
}

export interface RequestOptions {
  timeoutMs: number;
  /** What the HTTP header x-m4a-agent-session carries. */
  agentSession?: string | undefined;
  /** Giving up: the request ends at the daemon too (a parked wait answers as if its client left). */
  signal?: AbortSignal | undefined;
}

/** An answer as the daemon framed it: the HTTP route's 200 body, or its error object. */
export type Answer = { result: unknown } | { error: Record<string, unknown> };

export interface SubscribeOptions {
  /** A cursor to resume from; default the daemon's current head. */
  after?: string;
  /** A lost connection is being re-established (the subscription resumes from the last cursor). */
  onError?: (err: unknown) => void;
  /** Read at each (re)subscribe: the conversation the subscription is for (x-m4a-agent-session). */
  agentSession?: () => string | undefined;
}

interface Pending {
  settle: (err: Error | undefined, answer?: Answer) => void;
  /** The connection its frame went out on (none yet: not sent, so safe to send elsewhere). */
  sock: Socket | null;
  timer?: NodeJS.Timeout;
  abort?: () => void;
  signal?: AbortSignal;
}

interface Subscription {
  onMail: (e: MailEvent) => void;
  onError?: ((err: unknown) => void) | undefined;
  agentSession?: (() => string | undefined) | undefined;
  cursor: string | undefined;
  retry?: NodeJS.Timeout;
  failures: number;
}

const RESUBSCRIBE_MS = [100, 250, 500, 1_000, 2_000, 5_000];
const timedOut = (): MailError => new MailError('internal', 'the daemon did not answer in time');

/** Why this socket file must not be given the secret, or null when it is a socket of ours. */
export function socketProblem(path: string): string | null {
  if (typeof process.getuid !== 'function') return 'no uid to compare on this platform';
  let st;
  try {
    st = lstatSync(path);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'cannot stat';
  }
  if (!st.isSocket()) return st.isSymbolicLink() ? 'a symbolic link, not a socket' : 'not a socket';
  if (st.uid !== process.getuid()) return `owned by uid ${st.uid}, not by you`;
  return null;
}

export class StreamTransport {
  private sock: Socket | null = null;
  private ready: Promise<{ sock: Socket; hello: StreamHello }> | null = null;
  private pending = new Map<number, Pending>();
  private nextId = 1;
  private partial: Buffer[] = [];
  private sub: Subscription | null = null;

  constructor(private o: StreamOptions) {}

  get path(): string {
    return this.o.path;
  }

  /** One operation: resolves with the daemon's answer or error object; rejects when no answer can
   *  come (StreamUnavailable: not sent; DaemonUnreachable: the connection ended; a timeout; the
   *  signal's reason). */
  exchange(op: string, input: unknown, o: RequestOptions): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      if (o.signal?.aborted) return reject(asError(o.signal.reason));
      const id = this.nextId++;
      const p: Pending = {
        settle: (err, answer) => (err === undefined ? resolve(answer!) : reject(err)),
        sock: null,
        timer: setTimeout(() => this.finish(id, timedOut(), undefined, true), o.timeoutMs).unref(),
      };
      if (o.signal) {
        const signal = o.signal;
        p.signal = signal;
        p.abort = () => this.finish(id, asError(signal.reason), undefined, true);
        signal.addEventListener('abort', p.abort, { once: true });
      }
      this.pending.set(id, p);
      this.updateRef();
      this.open(o.agentSession).then(
        ({ sock, hello }) => {
          if (!this.pending.has(id)) return; // gave up meanwhile
          if (sock.destroyed) return this.finish(id, new StreamUnavailable(this.o.path, 'the connection closed', false));
          const line = frame(id, op, input, o.agentSession);
          // A line the daemon would refuse by closing the connection goes over HTTP instead,
          // whose answer names the limit the request is over.
          if (line.length * 3 > hello.max_line_bytes && Buffer.byteLength(line) > hello.max_line_bytes)
            return this.finish(id, new StreamUnavailable(this.o.path, 'the request is longer than a stream line may be', false));
          p.sock = sock;
          sock.write(line);
        },
        // A refused hello is the daemon's answer to this request too (over HTTP: its 401).
        (err: unknown) => (err instanceof HelloRefused ? this.finish(id, undefined, { error: err.body }) : this.finish(id, asError(err))),
      );
    });
  }

  /** One operation, its error thrown as MailError (as over HTTP). */
  async request<T>(op: string, input: unknown, o: RequestOptions): Promise<T> {
    const a = await this.exchange(op, input, o);
    if ('error' in a) throw errorFromBody({ error: a.error }, 0);
    return a.result as T;
  }

  /** Pushed mail from now on (or after `after`): one subscription per transport, re-established
   *  from the last cursor when the connection comes back. A second call replaces the first. */
  async subscribe(onMail: (e: MailEvent) => void, o: SubscribeOptions = {}): Promise<{ cursor: string }> {
    this.stopSubscription();
    const sub: Subscription = { onMail, onError: o.onError, agentSession: o.agentSession, cursor: o.after, failures: 0 };
    this.sub = sub;
    this.updateRef();
    try {
      const r = await this.request<{ cursor: string }>('subscribe', o.after ? { after: o.after } : {}, this.subOpts(sub));
      if (this.sub === sub) sub.cursor = r.cursor;
      return r;
    } catch (err) {
      if (this.sub === sub) this.stopSubscription();
      throw err;
    }
  }

  async unsubscribe(): Promise<void> {
    const had = this.sub !== null;
    this.stopSubscription();
    if (had && this.sock) await this.request('unsubscribe', {}, { timeoutMs: this.o.timeoutMs ?? 30_000 }).catch(() => undefined);
  }

  /** Ends the connection; requests in flight fail as over HTTP when the client is closed. A later
   *  request connects again. */
  close(): void {
    const subscribed = this.sub !== null;
    this.stopSubscription();
    const sock = this.sock;
    this.sock = null;
    this.ready = null;
    const live = sock !== null && !sock.destroyed && sock.writable;
    // The door keeps a half-closed connection's requests running for their answers: what this
    // client leaves behind (a parked wait, the subscription) is ended there first.
    if (live && subscribed) sock.write(frame(this.nextId++, 'unsubscribe', {}, undefined));
    const err = new DaemonUnreachable(this.o.path, new Error('the client was closed'));
    for (const [id, p] of [...this.pending]) {
      if (live && p.sock === sock) sock.write(frame(this.nextId++, 'cancel', { id }, undefined));
      this.finish(id, err);
    }
    if (sock) {
      sock.end();
      sock.unref();
      setTimeout(() => sock.destroy(), 1_000).unref();
    }
  }

  private subOpts(sub: Subscription): RequestOptions {
    return { timeoutMs: this.o.timeoutMs ?? 30_000, agentSession: sub.agentSession?.() };
  }

  private stopSubscription(): void {
    if (this.sub?.retry) clearTimeout(this.sub.retry);
    this.sub = null;
    this.updateRef();
  }

  /** `agentSession`: the conversation the request that opens the connection names; the hello
   *  carries it, since the daemon meets the session at hello (as HTTP meets it with the header). */
  private open(agentSession?: string): Promise<{ sock: Socket; hello: StreamHello }> {
    if (this.ready) return this.ready;
    const r = this.connectOnce(agentSession);
    this.ready = r;
    r.catch(() => {
      if (this.ready === r) this.ready = null;
    });
    return r;
  }

  private connectOnce(agentSession: string | undefined): Promise<{ sock: Socket; hello: StreamHello }> {
    const problem = socketProblem(this.o.path);
    if (problem) return Promise.reject(new StreamUnavailable(this.o.path, problem, true));
    const sock = connect({ path: this.o.path });
    this.sock = sock;
    this.partial = [];
    this.updateRef();
    sock.on('data', (chunk: Buffer) => this.onData(sock, chunk));
    sock.on('close', () => this.onClose(sock));
    return new Promise((resolve, reject) => {
      const failed = (err: unknown): void => {
        if (this.sock === sock) this.sock = null;
        sock.destroy();
        reject(asError(err));
      };
      const timer = setTimeout(() => failed(timedOut()), this.o.timeoutMs ?? 30_000).unref();
      // Before the connection is up: nothing was sent; ENOENT, ECONNREFUSED (a stale file),
      // EACCES last, a full backlog (EAGAIN) does not.
      const early = (err: NodeJS.ErrnoException): void => {
        clearTimeout(timer);
        failed(new StreamUnavailable(this.o.path, err.code ?? err.message, err.code !== 'EAGAIN', err));
      };
      sock.once('error', early);
      sock.once('connect', () => {
        sock.off('error', early);
        sock.on('error', () => undefined); // 'close' follows and fails what is in flight
        const input = { token: this.o.token, ...(this.o.clientName ? { client: this.o.clientName } : {}) };
        this.helloOn(sock, input, agentSession).then(
          (hello) => {
            clearTimeout(timer);
            resolve({ sock, hello });
          },
          (err: unknown) => {
            clearTimeout(timer);
            // Closed before hello answered (a daemon stopping, its limit of unauthenticated
            // connections): not sent, but worth another try; a refusal (unauthenticated) is the daemon's answer.
            failed(err instanceof DaemonUnreachable ? new StreamUnavailable(this.o.path, 'the connection closed before hello', false, err) : err);
          },
        );
      });
    });
  }

  private helloOn(sock: Socket, input: Record<string, string>, agentSession: string | undefined): Promise<StreamHello> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, {
        settle: (err, a) => {
          if (err !== undefined) reject(err);
          else if ('error' in a!) reject(new HelloRefused(a.error));
          else resolve(a!.result as StreamHello);
        },
        sock,
      });
      sock.write(frame(id, 'hello', input, agentSession));
    });
  }

  /** Splits the byte stream into lines without decoding a partial UTF-8 sequence. */
  private onData(sock: Socket, chunk: Buffer): void {
    if (sock !== this.sock) return;
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      const line = this.partial.length ? Buffer.concat([...this.partial, piece]).toString('utf8') : piece.toString('utf8');
      this.partial = [];
      start = nl + 1;
      this.onLine(line);
    }
    if (start < chunk.length) this.partial.push(chunk.subarray(start));
  }

  private onLine(line: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return; // not ours to answer: the daemon's frames are objects
    }
    if (msg === null || typeof msg !== 'object') return;
    if (msg.event === 'mail') return this.onMail(msg as unknown as MailEvent);
    // An error with id null is about a line, not a request; ours are always whole objects.
    if (typeof msg.id !== 'number') return;
    if (msg.error && typeof msg.error === 'object') this.finish(msg.id, undefined, { error: msg.error as Record<string, unknown> });
    else this.finish(msg.id, undefined, { result: msg.result });
  }

  private onMail(e: MailEvent): void {
    const sub = this.sub;
    if (!sub) return;
    sub.cursor = e.cursor;
    try {
      sub.onMail(e);
    } catch {
      /* the subscriber's own failure must not end the connection */
    }
  }

  private onClose(sock: Socket): void {
    if (this.sock === sock) this.sock = this.ready = null;
    this.partial = [];
    const err = new DaemonUnreachable(this.o.path, new Error('the daemon closed the connection'));
    for (const [id, p] of this.pending) if (p.sock === sock) this.finish(id, err);
    const sub = this.sub;
    if (sub && !sub.retry) this.resubscribeLater(sub);
  }

  /** The daemon went away (a restart): subscribe again from the last cursor, more slowly each time. */
  private resubscribeLater(sub: Subscription): void {
    const ms = RESUBSCRIBE_MS[Math.min(sub.failures, RESUBSCRIBE_MS.length - 1)] ?? 5_000;
    sub.retry = setTimeout(() => {
      sub.retry = undefined;
      if (this.sub !== sub) return;
      this.request<{ cursor: string }>('subscribe', sub.cursor ? { after: sub.cursor } : {}, this.subOpts(sub)).then(
        (r) => {
          sub.failures = 0;
          if (this.sub === sub) sub.cursor = r.cursor;
        },
        (err: unknown) => {
          sub.failures++;
          sub.onError?.(err);
          if (this.sub === sub && !sub.retry) this.resubscribeLater(sub);
        },
      );
    }, ms);
    if (this.o.unref) sub.retry.unref();
  }

  /** Settles request `id` once; a request given up (timeout, abort) is cancelled at the daemon. */
  private finish(id: number, err: Error | undefined, answer?: Answer, cancel = false): void {
    const p = this.pending.get(id);
    if (!p) return; // an answer to a request given up, or settled already
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (p.abort) p.signal?.removeEventListener('abort', p.abort);
    if (cancel && p.sock && p.sock === this.sock && !p.sock.destroyed) p.sock.write(frame(this.nextId++, 'cancel', { id }, undefined));
    this.updateRef();
    p.settle(err, answer);
  }

  /** Hold the process only while someone waits for an answer or for pushed mail. */
  private updateRef(): void {
    const s = this.sock;
    if (!s) return;
    if (!this.o.unref && (this.pending.size > 0 || this.sub)) s.ref();
    else s.unref();
  }
}

class HelloRefused extends Error {
  constructor(readonly body: Record<string, unknown>) {
    super(typeof body.message === 'string' ? body.message : 'hello refused');
  }
}

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

function frame(id: number, op: string, input: unknown, agentSession: string | undefined): string {
  return `${JSON.stringify(agentSession ? { id, op, input, agent_session: agentSession } : { id, op, input })}\n`;
}
