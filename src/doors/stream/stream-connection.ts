// One stream connection: lines in, frames out, requests in flight by id. Reading stops (the socket
// is paused between two lines) while 64 requests run, while hello is being checked, and while the
// unsent output is over its bound; it resumes when one of those ends. The end of the client's side
// is treated as HTTP treats it: requests' signals abort (a parked wait of a process that died
// leaves at once), whatever still answers is written, then the connection ends. Frames written in one turn of
// the event loop go out in one write (cork until the next tick).
import type { Socket } from 'node:net';
import { MailError } from '../../wire/errors.js';
import { StreamId, StreamRequest, type MailEventFrame } from '../../wire/stream.js';
import type { Attestation, PeerCredentials } from '../../attest/types.js';
import type { Logger } from '../../engine/log.js';
import type { MailSubscription } from '../../engine/mail-push.js';
import { jsonOf } from '../../engine/shared-page.js';
import { toMailError } from '../http/respond.js';
import { LineFramer } from './line-framer.js';

export interface StreamLimits {
  maxLineBytes: number;
  maxInFlight: number;
  maxQueuedBytes: number;
  helloTimeoutMs: number;
}

/** What a successful hello fixed for the connection's life. */
export interface StreamAuth {
  token: string;
  attestation: Attestation;
}

/** The door's side of a connection. */
export interface ConnectionHost {
  readonly limits: StreamLimits;
  readonly log: Logger;
  /** Runs one request; its result is the answer. `afterAnswer` runs once the answer is written. */
  dispatch(conn: StreamConnection, req: StreamRequest, signal: AbortSignal, afterAnswer: (fn: () => void) => void): Promise<unknown>;
  /** The connection said hello successfully (it leaves the unauthenticated bound). */
  authenticated(conn: StreamConnection): void;
  closed(conn: StreamConnection): void;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class StreamConnection {
  auth: StreamAuth | null = null;
  subscription: MailSubscription | null = null;
  /** A hello is being checked: no other line is read meanwhile (so a pipelined request after it is
   *  not refused `unauthenticated`). */
  helloBusy = false;
  closed = false;
  private released = false;
  private readonly framer: LineFramer;
  private readonly inFlight = new Map<StreamId, AbortController>();
  private drained: (() => void)[] = [];
  private corked = false;
  /** The client ended its side (or its process died: the two look alike): parked waits end as if
   *  it had gone, what else runs is answered, then ours ends. */
  private inputEnded = false;
  private helloTimer: NodeJS.Timeout | null;

  constructor(
    readonly socket: Socket,
    /** The kernel's record of the connecting process. */
    readonly peer: PeerCredentials,
    /** process.hrtime in ms at accept (the attestor's pid-reuse check). */
    readonly acceptedAtHrMs: number,
    private readonly host: ConnectionHost,
  ) {
    this.framer = new LineFramer(host.limits.maxLineBytes);
    this.helloTimer = setTimeout(() => {
      if (!this.auth) this.destroy();
    }, host.limits.helloTimeoutMs);
    socket.on('data', (chunk: Buffer) => {
      this.framer.push(chunk);
      this.pump();
    });
    socket.on('drain', () => {
      const waiting = this.drained;
      this.drained = [];
      for (const fn of waiting) fn();
      this.pump();
    });
    socket.on('end', () => {
      this.inputEnded = true;
      for (const ac of this.inFlight.values()) ac.abort();
      this.subscription?.end();
      this.subscription = null;
      this.pump();
    });
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.onClose());
  }

  get busy(): number {
    return this.inFlight.size;
  }

  /** Hello succeeded: the deadline no longer applies. */
  authenticate(auth: StreamAuth): void {
    this.auth = auth;
    if (this.helloTimer) clearTimeout(this.helloTimer);
    this.helloTimer = null;
    this.host.authenticated(this);
  }

  /** Ends request `id` if it still runs (its signal aborts: a parked wait leaves as if its client had gone). */
  cancel(id: StreamId): boolean {
    const ac = this.inFlight.get(id);
    ac?.abort();
    return ac !== undefined;
  }

  /** Writes a `mail` event; while the output is over its bound the promise holds the subscription
   *  until it drains (its mail stays in the store meanwhile). */
  pushEvent(frame: MailEventFrame): Promise<void> | void {
    if (this.closed) return;
    this.write(frame);
    if (this.overOutput()) return new Promise((resolve) => this.drained.push(resolve));
  }

  /** Answers with the error and closes once it is written. */
  fail(err: MailError): void {
    this.write({ id: null, error: err.toBody().error });
    this.finish();
  }

  /** Ends the connection after what is written so far; gone for good a moment later. */
  finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1_000).unref();
    this.onClose();
  }

  destroy(): void {
    this.socket.destroy();
    this.onClose();
  }

  private overOutput(): boolean {
    return this.socket.writableLength > this.host.limits.maxQueuedBytes;
  }

  private write(frame: unknown): void {
    if (this.socket.destroyed || !this.socket.writable) return;
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    // A page a wake batch shared between readers is serialised once for all of them (shared-page.ts).
    this.socket.write(jsonOf(frame) + '\n');
  }

  /** Reads lines while the bounds allow; pauses the socket when one of them holds. */
  private pump(): void {
    while (!this.closed) {
      if (this.helloBusy || this.inFlight.size >= this.host.limits.maxInFlight || this.overOutput()) {
        if (!this.socket.isPaused()) this.socket.pause();
        return;
      }
      const line = this.framer.next();
      if (line === null) break;
      if (!Buffer.isBuffer(line)) {
        const limit = this.host.limits.maxLineBytes;
        return this.fail(new MailError('too_large', `a line is over the limit of ${limit} bytes`, { field: 'line', limit, actual: line.overflow }));
      }
      this.onLine(line);
    }
    if (this.closed) return;
    if (this.inputEnded) {
      if (this.inFlight.size === 0) this.finish();
      return;
    }
    if (this.socket.isPaused()) this.socket.resume();
  }

  private onLine(line: Buffer): void {
    let v: unknown;
    try {
      v = JSON.parse(utf8.decode(line));
    } catch {
      if (line.length === 0 || (line.length === 1 && line[0] === 0x0d)) return; // an empty line: nothing asked
      return this.refuse(null, new MailError('malformed', 'a line is not a JSON object (UTF-8, one per line)', { field: 'line', reason: 'not JSON' }));
    }
    if (!isObject(v)) return this.refuse(null, new MailError('malformed', 'a line is not a JSON object', { field: 'line', reason: 'not an object' }));
    const id = StreamId.safeParse(v.id);
    if (!id.success) return this.refuse(null, new MailError('malformed', 'id: an integer 0..2^53-1 or a string of 1..64 characters', { field: 'id', reason: 'invalid' }));
    const req = StreamRequest.safeParse(v);
    if (!req.success) {
      const issue = req.error.issues[0];
      const field = issue?.code === 'unrecognized_keys' ? (issue.keys[0] ?? '(frame)') : String(issue?.path[0] ?? '(frame)');
      return this.refuse(
        id.data,
        new MailError('malformed', `${field}: ${issue?.message ?? 'invalid frame'}`, { field, reason: issue?.code === 'unrecognized_keys' ? 'unknown field' : 'invalid' }),
      );
    }
    // The refusal of a duplicate carries no id: it must not be taken for the answer of the first.
    if (this.inFlight.has(id.data)) return this.refuse(null, new MailError('malformed', 'a request with this id is in flight', { field: 'id', reason: 'duplicate' }));
    void this.run(req.data);
  }

  private refuse(id: StreamId | null, err: MailError): void {
    this.write({ id, error: err.toBody().error });
  }

  private async run(req: StreamRequest): Promise<void> {
    const ac = new AbortController();
    if (this.inputEnded) ac.abort(); // a line read after the end: nobody waits for a wait's answer
    this.inFlight.set(req.id, ac);
    const hello = req.op === 'hello' && this.auth === null;
    if (hello) this.helloBusy = true;
    const after: (() => void)[] = [];
    let failedHello = false;
    try {
      const result = await this.host.dispatch(this, req, ac.signal, (fn) => after.push(fn));
      this.write({ id: req.id, result: result ?? null });
    } catch (err) {
      this.refuse(req.id, toMailError(err, this.host.log));
      failedHello = hello;
    } finally {
      this.inFlight.delete(req.id);
      if (hello) this.helloBusy = false;
    }
    // A refused hello ends the connection: a new one may try again.
    if (failedHello) return this.finish();
    for (const fn of after) fn();
    this.pump();
  }

  private onClose(): void {
    this.closed = true;
    if (this.released) return;
    this.released = true;
    if (this.helloTimer) clearTimeout(this.helloTimer);
    this.helloTimer = null;
    for (const ac of this.inFlight.values()) ac.abort();
    this.subscription?.end();
    this.subscription = null;
    const waiting = this.drained;
    this.drained = [];
    for (const fn of waiting) fn();
    this.host.closed(this);
  }
}
