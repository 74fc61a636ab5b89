// The receipt of a message to an e-mail address: its state with the relay, read from the outbox
// entry (email-out.ts). "Sent" means the relay took it (a 250 answer), never that it reached the
// recipient's mailbox: SMTP tells the sender nothing more unless a bounce comes back later.
import type { EmailDeliveryOut, ReceiptOut } from '../wire/wake.js';
import type { Store, StoredMessage } from '../store/types.js';
import { iso } from './present.js';
import { readOutbox, type OutboxEntry } from './email-out.js';

export function deliveryOf(e: OutboxEntry | null): EmailDeliveryOut {
  if (!e)
    return {
      state: 'failed',
      attempts: 0,
      next_attempt_at: null,
      relay_response: null,
      error: 'no outbox entry',
      at: null,
      detail: 'never queued for the relay (its entry is missing)',
    };
  const at = e.done_at === null ? null : iso(e.done_at);
  const base = { state: e.state, attempts: e.attempts, next_attempt_at: null, relay_response: null, error: null, at };
  if (e.state === 'sent')
    return {
      ...base,
      relay_response: e.response,
      detail: `accepted by the relay at ${at ?? '?'} (${e.response ?? 'no answer text'}); not known to be delivered: the relay delivers it onward, and a bounce, if any, comes back by e-mail`,
    };
  if (e.state === 'failed') return { ...base, error: e.last_error, detail: `given up after ${e.attempts} attempt(s): ${e.last_error ?? 'no reason recorded'}` };
  const next = iso(e.next_at);
  return {
    ...base,
    next_attempt_at: next,
    error: e.last_error,
    detail: e.attempts === 0 ? `queued for the relay, first attempt due ${next}` : `queued: ${e.attempts} attempt(s) failed (last: ${e.last_error ?? '?'}); next attempt ${next}`,
  };
}

export async function emailReceipt(store: Store, m: StoredMessage): Promise<ReceiptOut> {
  return {
    recipient: m.toAddress,
    stored_at: iso(m.createdAt),
    signalled: [],
    surfaced_at: null,
    acked_at: null,
    email: deliveryOf(await readOutbox(store, m.id)),
  };
}
