// What one relay attempt ends in, and the claim record each attempt writes first (email-relay.ts):
// the claim's parse, the entry an ended attempt leaves, the relay's answer classified, and the
// backoff between attempts. Pure: no store, no network.
import { clipUtf8, neutralise } from '../wire/text.js';
import type { RecordRow } from '../store/types.js';
import type { OutboxEntry } from '../engine/email-out.js';

export type Outcome = { kind: 'sent'; response: string } | { kind: 'retry'; detail: string } | { kind: 'failed'; detail: string };

export interface Claim {
  at: number;
  host: string;
  /** Written by the claimer once its attempt ended the message (sent or failed). */
  outcome?: Terminal;
}

/** An entry's end: what the claim record of the attempt that ended it keeps too. */
export type Terminal = { state: 'sent'; response: string; at: number } | { state: 'failed'; detail: string; at: number };

/** A line of the relay's (or the network's) text, safe to show: one line, at most 400 bytes. */
export const line = (s: string): string => clipUtf8(neutralise(s.replace(/\s+/g, ' ').trim()), 400);

/** The wait after the n-th failed attempt: doubling from base to the cap, the upper half jittered
 *  so that mail queued together does not return together. */
export function relayBackoffMs(n: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const d = Math.min(maxMs, baseMs * 2 ** Math.min(n - 1, 30));
  return Math.round(d / 2 + (random() * d) / 2);
}

export function parseClaim(row: RecordRow | null): Claim {
  try {
    const v = JSON.parse(row?.value ?? '{}') as Partial<Claim>;
    const o = v.outcome;
    const outcome: Terminal | undefined =
      o?.state === 'sent' && typeof o.response === 'string' && typeof o.at === 'number'
        ? { state: 'sent', response: o.response, at: o.at }
        : o?.state === 'failed' && typeof o.detail === 'string' && typeof o.at === 'number'
          ? { state: 'failed', detail: o.detail, at: o.at }
          : undefined;
    return { at: typeof v.at === 'number' ? v.at : (row?.updatedAt ?? 0), host: typeof v.host === 'string' ? v.host : '', ...(outcome ? { outcome } : {}) };
  } catch {
    return { at: row?.updatedAt ?? 0, host: '' };
  }
}

/** The entry as the attempt that ended it left it. */
export function terminalEntry(entry: OutboxEntry, t: Terminal): OutboxEntry {
  return t.state === 'sent'
    ? { ...entry, state: 'sent', response: t.response, last_error: null, done_at: t.at }
    : { ...entry, state: 'failed', last_error: t.detail, done_at: t.at };
}

/** A refusal by the relay (5xx, except to AUTH: credentials are the operator's to fix, and the
 *  mail waits for it) fails the message; anything else is tried again. */
export function classify(err: unknown): Outcome {
  const e = err as { code?: unknown; responseCode?: unknown; response?: unknown; message?: unknown };
  const text = line(typeof e.response === 'string' && e.response ? e.response : typeof e.message === 'string' ? e.message : String(err));
  const code = typeof e.responseCode === 'number' ? e.responseCode : null;
  if (code !== null && code >= 500 && code < 600 && e.code !== 'EAUTH') return { kind: 'failed', detail: `the relay refused it: ${text}` };
  if (e.code === 'EAUTH') return { kind: 'retry', detail: `the relay refused the credentials: ${text}` };
  return { kind: 'retry', detail: code !== null ? `the relay answered ${text}` : `${typeof e.code === 'string' ? `${e.code}: ` : ''}${text}` };
}
