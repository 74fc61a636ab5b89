// A relay's `call` frames, run as the browser door runs /web/api/<name>: the same operation path
// (runWebApi), a Caller with no session for the configured human mailbox, and a `via` when a
// delegate wrote. Only the configured mailboxes and RELAYED_WEB_CALLS are reachable; everything
// else is answered not_relayed and logged, since a relay asking for more is worth an operator's look.
import { MailError } from '../../wire/errors.js';
import { RELAY_LIMITS, isRelayedWebCall, type NodeFrame, type RelayCallFrame } from '../../wire/relay-link.js';
import type { Caller } from '../../engine/mail-engine.js';
import type { Logger } from '../../engine/log.js';
import { runWebApi, type WebApiContext } from '../web/web-api.js';

export interface RelayCallsOptions {
  ctx: WebApiContext;
  /** The mailboxes this link offers (the configured list). */
  mailboxes: ReadonlySet<string>;
  /** The relay's host as the delegate's `via.relay`. */
  relayHost: string;
  log: Logger;
  send(frame: NodeFrame): void;
}

type Answer = Extract<NodeFrame, { t: 'answer' }>;

const errorAnswer = (id: string, e: MailError): Answer => ({ t: 'answer', id, status: e.httpStatus, body: e.toBody() });

export class RelayCalls {
  private readonly running = new Map<string, AbortController>();

  constructor(private readonly o: RelayCallsOptions) {}

  get inFlight(): number {
    return this.running.size;
  }

  /** Runs one call and sends its answer; never throws. */
  handle(f: RelayCallFrame): void {
    if (this.running.has(f.id)) {
      this.o.log.warn({ id: f.id }, 'relay link: a call id already in flight; ignored');
      return;
    }
    if (this.running.size >= RELAY_LIMITS.callsInFlight) {
      this.o.send(errorAnswer(f.id, new MailError('rate_limited', 'too many relayed calls in flight', { retry_after: 1, limit: RELAY_LIMITS.callsInFlight })));
      return;
    }
    const ac = new AbortController();
    this.running.set(f.id, ac);
    void this.run(f, ac.signal)
      .then(
        (body): Answer => ({ t: 'answer', id: f.id, status: 200, body }),
        (err: unknown): Answer => errorAnswer(f.id, this.asMailError(err)),
      )
      .then((a) => {
        this.running.delete(f.id);
        this.sendAnswer(a);
      });
  }

  /** The browser went away: a parked read ends at once (its answer still goes back). */
  cancel(id: string): void {
    this.running.get(id)?.abort();
  }

  /** The connection closed: every call's signal fires. */
  abortAll(): void {
    for (const ac of this.running.values()) ac.abort();
    this.running.clear();
  }

  private async run(f: RelayCallFrame, signal: AbortSignal): Promise<unknown> {
    if (!this.o.mailboxes.has(f.mailbox)) {
      this.o.log.warn({ mailbox: f.mailbox, call: f.name }, 'relay link: a call for a mailbox this node does not offer; refused');
      throw new MailError('not_relayed', `${f.mailbox} is not offered through this relay`, { mailbox: f.mailbox });
    }
    if (!isRelayedWebCall(f.name)) {
      this.o.log.warn({ mailbox: f.mailbox, call: f.name }, 'relay link: a call the relay may not forward; refused');
      throw new MailError('not_relayed', `${f.name} is not carried through the relay`, { call: f.name });
    }
    const account = await this.o.ctx.engine.store.getAccount(f.mailbox);
    if (account?.kind !== 'human') {
      this.o.log.warn({ mailbox: f.mailbox }, 'relay link: a configured mailbox is no human account now; refused');
      throw new MailError('not_relayed', `${f.mailbox} is not a person's account`, { mailbox: f.mailbox });
    }
    const caller: Caller = { account, session: null, ...(f.delegate ? { via: { relay: this.o.relayHost, delegate: f.delegate } } : {}) };
    return runWebApi(f.name, this.o.ctx, caller, f.body ?? {}, signal);
  }

  private asMailError(err: unknown): MailError {
    if (err instanceof MailError) return err;
    this.o.log.error({ err: err instanceof Error ? (err.stack ?? err.message) : String(err) }, 'relay link: unexpected failure of a call');
    return new MailError('internal', 'internal error');
  }

  /** An answer over the frame limit would make the relay drop the link: it is refused instead. */
  private sendAnswer(a: Answer): void {
    const bytes = Buffer.byteLength(JSON.stringify(a));
    if (bytes <= RELAY_LIMITS.frameBytes - 1024) return this.o.send(a);
    this.o.send(errorAnswer(a.id, new MailError('too_large', 'the answer is larger than a relay frame', { field: '(answer)', limit: RELAY_LIMITS.frameBytes, actual: bytes })));
  }
}
