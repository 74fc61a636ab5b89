// The message a send stores, built in one place for every way a send leaves (mail-post.ts's deliver,
// email-out.ts's mail to `email:`): the same fields from the request, and the same fingerprint that
// tells a repeated idempotency key with the same content from one reused for another message.
import { createHash } from 'node:crypto';
import { formatAddress } from '../wire/address.js';
import type * as W from '../wire/ops.js';
import type { NewMessage, StoredMessage } from '../store/types.js';
import type { Caller } from './mail-engine.js';

/** The send as written (address, text, threading, refs, priority), hashed. */
export function sendFingerprint(req: W.SendRequest): string {
  return createHash('sha256')
    .update(JSON.stringify([formatAddress(req.to), req.subject, req.body, req.reply_to ?? null, req.correlation ?? null, req.refs ?? [], req.priority ?? 'normal']))
    .digest('hex');
}

export interface SentPlace {
  id: string;
  /** The message reply_to names (already checked): the new one joins its thread. */
  parent: StoredMessage | null;
  /** The thread of a message with no parent (default: its own id). */
  threadId?: string;
  toAddress: string;
  toKey: string;
  createdAt: number;
}

/** The caller's send as the store's NewMessage (no task mark: the caller adds that). */
export function sentMessage(c: Caller, req: W.SendRequest, p: SentPlace): NewMessage {
  return {
    id: p.id,
    threadId: p.parent ? p.parent.threadId : (p.threadId ?? p.id),
    fromAccount: c.account.id,
    fromSession: c.session?.id ?? null,
    fromKind: c.account.kind,
    toAddress: p.toAddress,
    toKey: p.toKey,
    subject: req.subject,
    body: req.body,
    replyTo: req.reply_to ?? null,
    correlation: req.correlation ?? null,
    refs: req.refs ?? [],
    priority: req.priority ?? 'normal',
    createdAt: p.createdAt,
    idempotencyKey: req.idempotency_key ?? null,
    fingerprint: req.idempotency_key ? sendFingerprint(req) : null,
    // From the relay link's login, never from the request (Caller.via).
    ...(c.via ? { via: { relay: c.via.relay, delegate: c.via.delegate } } : {}),
  };
}
