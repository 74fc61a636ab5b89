// What a stream request does: hello (the credential as the HTTP door's CallerResolver checks it,
// and the kernel-attested peer), the operation table through callOperation with the callers HTTP
// takes, "mcp" through McpHandler, and the ops only this door has: cancel, subscribe, unsubscribe.
import { AGENT_SESSION_ID } from '../../wire/capabilities.js';
import { MailError } from '../../wire/errors.js';
import { parseInput } from '../../wire/validate.js';
import { CancelRequest, HelloRequest, STREAM_LIMITS, SubscribeRequest, UnsubscribeRequest, type HelloResponse, type StreamRequest } from '../../wire/stream.js';
import type { Attestor } from '../../attest/types.js';
import type { AdminOps } from '../../engine/admin-ops.js';
import type { Logger } from '../../engine/log.js';
import type { Caller, MailEngine } from '../../engine/mail-engine.js';
import type { WakeChains } from '../../engine/wake-chains.js';
import { bearerOperation, callOperation, errorCode, type Door, type OpContext } from '../handlers.js';
import type { Observer } from '../../engine/observer.js';
import { requestIdOf, withRequestId } from '../../engine/request-id.js';
import { attestationRefusal } from '../http/caller-resolver.js';
import { McpHandler } from '../mcp/mcp-handler.js';
import type { StreamConnection } from './stream-connection.js';
import type { RelayLink } from '../relay-link/relay-link.js';

export interface StreamOpsOptions {
  engine: MailEngine;
  admin: AdminOps;
  wake?: WakeChains | undefined;
  attestor: Attestor;
  log: Logger;
  version: string;
  onStopRequest?: ((when: 'now' | 'idle') => void) | undefined;
  /** Told of every operation's outcome (the daemon's metrics). */
  observer?: Observer | undefined;
  /** The relay link's settings (`connect.*`). */
  relayLink?: RelayLink | undefined;
}

type AfterAnswer = (fn: () => void) => void;

export class StreamOps {
  private readonly mcp: McpHandler;

  constructor(private readonly o: StreamOpsOptions) {
    this.mcp = new McpHandler((signal) => this.context(signal, () => undefined, 'mcp'), o.version, o.log);
  }

  /** Each request in its own scope: every line logged while it is served carries one id. */
  dispatch(conn: StreamConnection, req: StreamRequest, signal: AbortSignal, afterAnswer: AfterAnswer): Promise<unknown> {
    return withRequestId(requestIdOf(undefined), () => this.run(conn, req, signal, afterAnswer));
  }

  private async run(conn: StreamConnection, req: StreamRequest, signal: AbortSignal, afterAnswer: AfterAnswer): Promise<unknown> {
    if (req.op === 'hello') {
      if (conn.auth) throw new MailError('malformed', 'hello was said already on this connection', { field: 'op', reason: 'second hello' });
      return this.hello(conn, req);
    }
    if (!conn.auth) throw new MailError('unauthenticated', 'say hello first: {"op":"hello","input":{"token":"<secret>"}}');
    const input = req.input ?? {};
    switch (req.op) {
      case 'cancel': {
        const q = parseInput(CancelRequest, input);
        return { ok: true, found: q.id !== req.id && conn.cancel(q.id) };
      }
      case 'subscribe':
        return this.subscribe(conn, req, afterAnswer);
      case 'unsubscribe':
        parseInput(UnsubscribeRequest, input);
        conn.subscription?.end();
        conn.subscription = null;
        return { ok: true };
      case 'mcp': {
        const ans = await this.mcp.handle(await this.mailCaller(conn, req), input, signal);
        return { status: ans.status, body: ans.body ?? null };
      }
    }
    const op = bearerOperation(req.op, this.o.wake !== undefined);
    if (!op) throw new MailError('unknown_route', `no operation ${req.op}`, { field: 'op' });
    // The socket is this machine's by construction, so 'local' operations are served as to a
    // loopback peer; agent operations take the attested session, the rest the operator credential.
    const caller = await (op.spec.callers.includes('agent') ? this.mailCaller(conn, req) : this.adminCaller(conn)).catch((err: unknown): never => {
      this.o.observer?.operation('stream', op.name, errorCode(err));
      throw err;
    });
    return callOperation(op.name, this.context(signal, afterAnswer, 'stream'), caller, input);
  }

  /** The credential first (an unknown secret costs no /proc read), then the kernel's peer. */
  private async hello(conn: StreamConnection, req: StreamRequest): Promise<HelloResponse> {
    const q = parseInput(HelloRequest, req.input ?? {});
    const account = await this.o.engine.verify(q.token);
    if (!this.o.attestor.attestPeer) throw new MailError('unattested', 'process attestation is not implemented on this platform', { reason: 'unsupported_platform' });
    const r = await this.o.attestor.attestPeer({ pid: conn.peer.pid, uid: conn.peer.uid, acceptedAtHrMs: conn.acceptedAtHrMs });
    if (!r.ok) throw attestationRefusal(r);
    // The session is met here, as HTTP meets it on an agent request; the operator credential (the
    // CLI's admin commands) is met by none until it makes one, as over HTTP.
    const caller = account.permissions.operator ? null : await this.o.engine.callerFor(account, r.attestation, agentSession(req));
    if (conn.closed) throw new MailError('malformed', 'the client closed the connection during hello', { field: '(request)', reason: 'client_gone' });
    conn.authenticate({ token: q.token, attestation: r.attestation });
    this.o.log.debug({ account: account.id, pid: conn.peer.pid, client: q.client }, 'stream connection said hello');
    return {
      account: account.id,
      session: caller?.session?.id ?? null,
      version: this.o.version,
      max_in_flight: STREAM_LIMITS.maxInFlight,
      max_line_bytes: STREAM_LIMITS.maxLineBytes,
    };
  }

  /** The credential is checked again for every request (the 1 s digest cache), as over HTTP: a
   *  rotated or removed secret stops working on open connections too. */
  private async mailCaller(conn: StreamConnection, req: StreamRequest): Promise<Caller> {
    const auth = conn.auth!;
    const account = await this.o.engine.verify(auth.token);
    return this.o.engine.callerFor(account, auth.attestation, agentSession(req));
  }

  private async adminCaller(conn: StreamConnection): Promise<Caller> {
    return { account: await this.o.engine.verify(conn.auth!.token), session: null };
  }

  private async subscribe(conn: StreamConnection, req: StreamRequest, afterAnswer: AfterAnswer): Promise<{ cursor: string }> {
    const q = parseInput(SubscribeRequest, req.input ?? {});
    // Events wait for the subscribe answer, so the client learns the cursor first.
    let answered!: () => void;
    const written = new Promise<void>((r) => (answered = r));
    afterAnswer(answered);
    const sub = await this.o.engine.subscribeMail({
      caller: () => this.mailCaller(conn, req),
      after: q.after,
      limit: STREAM_LIMITS.eventMessages,
      sink: async (ev) => {
        await written;
        return conn.pushEvent({ event: 'mail', cursor: ev.cursor, messages: ev.messages });
      },
      // The credential stopped verifying (or may no longer read): the connection is of no more use.
      onEnd: (err) => conn.fail(err),
    });
    conn.subscription?.end(); // one per connection: a second replaces the first
    conn.subscription = sub;
    if (conn.closed) sub.end();
    return { cursor: sub.cursor };
  }

  private context(signal: AbortSignal, afterAnswer: AfterAnswer, door: Door): OpContext {
    const o = this.o;
    return { engine: o.engine, admin: o.admin, wake: o.wake, door, signal, afterAnswer, onStopRequest: o.onStopRequest, observer: o.observer, relayLink: o.relayLink };
  }
}

/** What the x-m4a-agent-session header carries over HTTP, checked the same way. */
function agentSession(req: StreamRequest): string | undefined {
  const v = req.agent_session;
  if (v !== undefined && !AGENT_SESSION_ID.test(v))
    throw new MailError('malformed', 'agent_session must be one token of letters, digits and . _ : - (at most 128)', { field: 'agent_session', reason: 'pattern' });
  return v;
}
