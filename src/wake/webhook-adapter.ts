// The webhook adapter: a signed POST of the wake (ids, senders, subjects; never bodies) to the URL of
// a `webhook` step, delivered at least once through the durable WebhookOutbox.
//
// wake() persists the event, waits for the first attempt and answers:
//   delivered (2xx)                 → ok:true
//   failed in a way worth retrying → ok:true, "queued for retry": the outbox keeps the event (across
//                                     restarts) and retries with backoff for its bounded window
//   refused for good (4xx, URL)     → ok:false, the chain goes on
// A 2xx means the receiver took the event, not that an agent read the mail.
import type { Clock } from '../engine/clock.js';
import { systemClock } from '../engine/clock.js';
import type { WebhookStep } from '../wire/wake.js';
import { safeJson } from '../wire/text.js';
import type { WakeAdapter, WakeRequest, WakeResult } from './types.js';
import { checkWebhookStep } from './remote-url.js';
import type { WebhookOutbox } from './webhook-outbox.js';

/** The JSON body a receiver gets. */
export interface WebhookPayload {
  event_id: string;
  type: 'mail.wake';
  account: string;
  session: { id: string; lineage: string; slug: string | null } | null;
  /** external: e-mail from outside, untrusted (left out otherwise). */
  mail: Array<{ message_id: string; from: string; subject: string; priority: string; thread_id: string; external?: true; delegate?: string }>;
  urgent: boolean;
  text: string;
  created_at: string;
}

export function webhookPayload(req: WakeRequest, createdAtMs: number): WebhookPayload {
  return {
    event_id: req.eventId,
    type: 'mail.wake',
    account: req.account,
    session: req.session ? { id: req.session.id, lineage: req.session.lineage, slug: req.session.slug } : null,
    mail: req.mail.map((m) => ({
      message_id: m.message_id,
      from: m.from,
      subject: m.subject,
      priority: m.priority,
      thread_id: m.thread_id,
      ...(m.external ? { external: true as const } : {}),
      ...(m.delegate ? { delegate: m.delegate } : {}),
    })),
    urgent: req.urgent,
    text: req.text,
    created_at: new Date(createdAtMs).toISOString(),
  };
}

/** How long a wake waits for its event's first attempt (an attempt itself times out after 10 s). */
export const FIRST_ATTEMPT_WAIT_MS = 15_000;

export interface WebhookAdapterOptions {
  /** Shared by every webhook adapter of the daemon; the daemon start()s and close()s it. */
  outbox: WebhookOutbox;
  clock?: Clock;
}

export class WebhookAdapter implements WakeAdapter {
  readonly kind = 'webhook';
  private readonly clock: Clock;

  /** Throws MailError('malformed', {field:'url'}) for a URL checkWebhookUrl refuses. */
  constructor(
    readonly step: WebhookStep,
    private readonly opts: WebhookAdapterOptions,
  ) {
    checkWebhookStep(step);
    this.clock = opts.clock ?? systemClock;
  }

  async wake(req: WakeRequest, signal: AbortSignal): Promise<WakeResult> {
    if (signal.aborted) return { ok: false, detail: 'aborted before the webhook was queued' };
    const body = safeJson(webhookPayload(req, this.clock.now()));
    const queued = this.opts.outbox.enqueue({ eventId: req.eventId, url: this.step.url, allowRemote: this.step.allow_remote ?? false, body }).then(
      (r): WakeResult => {
        switch (r.status) {
          case 'delivered':
            return { ok: true, detail: r.detail };
          case 'retrying':
            return { ok: true, detail: r.detail };
          case 'duplicate':
            return { ok: true, detail: r.detail };
          case 'failed':
            return { ok: false, detail: r.detail };
        }
      },
      (err: unknown): WakeResult => ({ ok: false, detail: `webhook not queued: ${err instanceof Error ? err.message : String(err)}` }),
    );
    let onAbort: (() => void) | undefined;
    let stopWaiting: (() => void) | undefined;
    const aborted = new Promise<WakeResult>((resolve) => {
      onAbort = () => resolve({ ok: false, detail: 'aborted while waiting for the first attempt; a queued event is still retried' });
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // Behind other deliveries to a busy receiver (the outbox's per-origin limit) the first attempt
    // may wait long: the wake answers by then, the event stays queued and is delivered in turn.
    const waited = new Promise<WakeResult>((resolve) => {
      stopWaiting = this.clock.timer(FIRST_ATTEMPT_WAIT_MS, () => resolve({ ok: true, detail: 'queued behind other deliveries to this receiver; delivered in turn' }));
    });
    try {
      return await Promise.race([queued, aborted, waited]);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
      stopWaiting?.();
    }
  }
}
