// What the crash and restart tests check at the end: every acknowledged message present exactly
// once with the id its acknowledgement named, nothing else in a reader's mailbox, unread counting
// each once, the walk a reader continued across the failures equal to a fresh walk, and each
// sender lane's messages in send order.
import assert from 'node:assert/strict';
import type { MailClient } from '../../src/client/http-client.js';
import type { MessageOut } from '../../src/wire/ops.js';

/** One logical message: its key never changes, whatever happens to its sends. */
export interface Logical {
  key: string;
  lane: string;
  n: number;
  sender: string;
  to: string;
  subject: string;
  body: string;
  /** The id from the first acknowledgement received for this key. */
  ackedId: string | null;
  attempts: number;
  /** Before its retry: the id a reader found for this key after the crash, or null if none. */
  foundBeforeRetry?: string | null;
}

/** A reader's cursor and what its walks saw, continued across every failure. */
export interface Walk {
  cursor: string | undefined;
  seen: MessageOut[];
}

/** Pages on from the walk's cursor (random page sizes) until a page comes back empty. */
export async function continueWalk(c: MailClient, w: Walk, rand: () => number): Promise<void> {
  for (let pages = 0; pages < 2000; pages++) {
    const p = await c.inbox({ include_acked: true, limit: 1 + Math.floor(rand() * 40), ...(w.cursor ? { after: w.cursor } : {}) });
    if (p.messages.length === 0) return;
    w.seen.push(...p.messages);
    w.cursor = p.next_cursor!;
  }
  assert.fail('a cursor walk did not end within 2000 pages');
}

export interface VerdictInput {
  readers: string[];
  clients: Map<string, MailClient>;
  walks: Map<string, Walk>;
  all: Map<string, Logical>;
  rand: () => number;
  /** Adds the seed (and how to rerun) to a failure message. */
  where: (s: string) => string;
  /** What the continued walks went through ("3 crashes"). */
  across: string;
}

export async function verdict(v: VerdictInput): Promise<void> {
  const { all, where } = v;
  const unacked = [...all.values()].filter((m) => m.ackedId === null);
  assert.deepEqual(
    unacked.map((m) => m.key),
    [],
    where('no logical message left unacknowledged'),
  );
  for (const r of v.readers) {
    const c = v.clients.get(r)!;
    const w = v.walks.get(r)!;
    await continueWalk(c, w, v.rand);
    // A fresh walk from the start, with other page sizes, sees the same thing.
    const fresh: Walk = { cursor: undefined, seen: [] };
    await continueWalk(c, fresh, v.rand);
    const unread = (await c.unread()).unread;
    assert.deepEqual(
      w.seen.map((m) => m.message_id),
      fresh.seen.map((m) => m.message_id),
      where(`${r}: the walk continued across ${v.across} equals a fresh walk`),
    );
    const seen = fresh.seen;
    // Each message once, by id and by idempotency key (correlation).
    assert.equal(new Set(seen.map((m) => m.message_id)).size, seen.length, where(`${r}: no message twice`));
    const byKey = new Map<string, MessageOut>();
    for (const m of seen) {
      assert.ok(m.correlation && all.has(m.correlation), where(`${r}: ${m.message_id} is one of ours`));
      assert.ok(!byKey.has(m.correlation), where(`${r}: key ${m.correlation} stored twice`));
      byKey.set(m.correlation, m);
    }
    const mine = [...all.values()].filter((m) => m.to === r || m.to === '#crash');
    for (const m of mine) {
      const got = byKey.get(m.key);
      assert.ok(got, where(`${r}: acknowledged ${m.key} (${m.attempts} attempts) is missing`));
      assert.equal(got.message_id, m.ackedId, where(`${r}: ${m.key} has the id its acknowledgement named`));
      assert.equal(got.subject, m.subject);
      assert.equal(got.body, m.body);
    }
    assert.equal(seen.length, mine.length, where(`${r}: nothing but the messages sent to it`));
    assert.equal(unread, mine.length, where(`${r}: unread counts every message once`));
    // Send order within each lane (one send at a time) is the order every reader sees.
    const lastN = new Map<string, number>();
    for (const m of seen) {
      const l = all.get(m.correlation!)!;
      assert.ok((lastN.get(l.lane) ?? -1) < l.n, where(`${r}: ${l.key} after ${l.lane}.n${lastN.get(l.lane)}: out of order`));
      lastN.set(l.lane, l.n);
    }
  }
}
