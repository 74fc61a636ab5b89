// Appends: group commit under the head lock, and the seq assignment it makes exact.
//
// A seq is assigned when the append batch commits, not when it starts: the batch first locks the
// single `message_head` row (SELECT … FOR UPDATE), checks idempotency keys and ids, takes
// head+1 … head+n, inserts, moves the head and commits. The row lock is the serialisation point of
// every append of every daemon, held only for that last step (a handful of statements and the
// commit's fsync; group commit makes one batch carry every append of a turn). Consequences:
//   - seqs are dense and in commit order: a rolled-back batch rolls its head move back too;
//   - the committed seqs always form a prefix: a batch gets its seqs only after the previous
//     holder committed (PostgreSQL makes a commit visible before it releases the row lock), so no
//     reader, in any snapshot, can see seq 102 while 101 is still to come. page, messagesAfter,
//     headSeq and onCommit events therefore never expose a seq above a gap that may fill later,
//     and a cursor can never pass one. No watermark filtering is needed.
//   - an idempotency key checked under the lock is checked against every committed message, so the
//     same key sent to two daemons at once yields one 'created' and one 'duplicate' (or 'conflict').
//
// A send resolves only once its batch committed. When the connection dies under a batch, the batch
// looks up whether it committed (then it answers normally) or not (then it runs once more); only
// when that cannot be told does the send reject, and the client retries with its idempotency key.
import type { AppendOutcome, NewMessage, StoredMessage } from '../types.js';
import { messageParams, toMessage, type MessageRow } from '../sqlite/rows.js';
import { pgArray, type Sql } from './pg-sql.js';
import { isConnectionLoss, lostConnectionPause, withRetry } from './with-retry.js';
import { keyedPayload } from './commit-feed.js';
import { indexRows, WRITER_INDEXES } from './search-docs.js';

interface AppendInput {
  m: NewMessage;
  since: number;
}

interface Pending {
  input: AppendInput;
  resolve: (o: AppendOutcome) => void;
  reject: (err: unknown) => void;
}

export interface BatchResult {
  outcomes: (AppendOutcome | Error)[];
  prevHead: number;
  head: number;
}

export interface AppendBatchStats {
  appendBatches: number;
  appends: number;
}

export class AppendBatch {
  private readonly counts: AppendBatchStats = { appendBatches: 0, appends: 0 };
  private queue: Pending[] = [];
  private flushing = false;
  private scheduled = false;
  private batchDone: Promise<void> = Promise.resolve();

  /**
   * @param committed runs after each batch committed, its callers answered (the commit feed).
   * @param beforeCommit tests only: runs inside a batch after its seqs are taken, before it commits.
   */
  constructor(
    private readonly sql: Sql,
    private readonly channel: string,
    private readonly committed: (r: BatchResult) => void,
    private readonly beforeCommit?: (firstSeq: number, lastSeq: number) => Promise<void>,
  ) {}

  stats(): AppendBatchStats {
    return { ...this.counts };
  }

  submit(m: NewMessage, idempotentSince: number): Promise<AppendOutcome> {
    return new Promise<AppendOutcome>((resolve, reject) => {
      this.queue.push({ input: { m, since: idempotentSince }, resolve, reject });
      if (!this.flushing && !this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /** Runs every queued batch to its end (for close). */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.flushing) {
      if (!this.flushing) void this.flush();
      await this.batchDone;
    }
  }

  /** One batch at a time per store: everything queued meanwhile forms the next batch. Calls in
   *  one batch get seqs in call order. */
  private async flush(): Promise<void> {
    this.scheduled = false;
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = true;
    const batch = this.queue;
    this.queue = [];
    let done!: () => void;
    this.batchDone = new Promise<void>((r) => (done = r));
    try {
      let result: BatchResult;
      try {
        result = await this.runSettled(batch.map((p) => p.input));
      } catch (err) {
        for (const p of batch) p.reject(err);
        return;
      }
      this.counts.appendBatches++;
      this.counts.appends += batch.length;
      batch.forEach((p, i) => {
        const o = result.outcomes[i] as AppendOutcome | Error;
        if (o instanceof Error) p.reject(o);
        else p.resolve(o);
      });
      this.committed(result);
    } finally {
      this.flushing = false;
      done();
      if (this.queue.length > 0) void this.flush();
    }
  }

  /**
   * Runs the batch; when the connection is lost during it, finds out whether it committed (the
   * COMMIT may have landed before the connection died): committed → the batch's answers stand;
   * certainly not committed → runs it again on a fresh connection (up to four times more: terminating
   * every backend of the pool can cost a batch more than one connection). Only when that cannot be
   * told (the database is away) does the batch reject, and the client retries with its key.
   */
  private async runSettled(inputs: AppendInput[]): Promise<BatchResult> {
    for (let attempt = 0; ; attempt++) {
      const computed: { result: BatchResult | null } = { result: null };
      try {
        return await this.run(inputs, computed);
      } catch (err) {
        if (!isConnectionLoss(err) || attempt >= 4) throw err;
        const r = computed.result;
        const created = r ? r.outcomes.filter((o): o is Extract<AppendOutcome, { kind: 'created' }> => !(o instanceof Error) && o.kind === 'created') : [];
        if (r && created.length === 0) return r; // nothing to write: every answer (duplicates, refusals) stands, committed or not
        let found: { id: string; seq: number }[];
        try {
          const ids = pgArray(created.map((c) => c.message.id));
          found = r ? await withRetry(() => this.sql<{ id: string; seq: number }[]>`SELECT id, seq FROM messages WHERE id = ANY(${ids}::text[])`) : [];
        } catch {
          throw err; // cannot tell: reject, the client's idempotent retry settles it
        }
        if (r && found.length === created.length && found.every((f) => created.some((c) => c.message.id === f.id && c.message.seq === f.seq))) {
          return r; // it committed; only the answer was lost
        }
        if (found.length > 0) throw err; // cannot happen (one transaction); refuse to guess
        // Not committed: run it again (a new transaction, on a new connection).
        await lostConnectionPause(attempt);
      }
    }
  }

  private async run(inputs: AppendInput[], computed: { result: BatchResult | null }): Promise<BatchResult> {
    return this.sql.begin(async (tx) => {
      // The serialisation point: every append of every daemon takes this row lock, then sees every
      // committed message (READ COMMITTED: each statement below takes a fresh snapshot).
      // The three reads are pipelined (one round trip): the server runs them in order, so the two
      // checks run after the lock is taken, each on a fresh snapshot.
      const keyed = inputs.filter((i) => i.m.idempotencyKey !== null);
      const [[h], priorRows, takenRows] = await Promise.all([
        tx<{ seq: number }[]>`SELECT seq FROM message_head WHERE one = 1 FOR UPDATE`,
        keyed.length === 0
          ? Promise.resolve([])
          : tx<(MessageRow & { i: number })[]>`SELECT q.i::int AS i, m.*
          FROM unnest(${pgArray(keyed.map((k) => k.m.fromAccount))}::text[],
                      ${pgArray(keyed.map((k) => k.m.idempotencyKey as string))}::text[],
                      ${pgArray(keyed.map((k) => k.since))}::bigint[]) WITH ORDINALITY AS q(a, k, since, i)
          CROSS JOIN LATERAL (SELECT * FROM messages AS x
            WHERE x.from_account = q.a AND x.idempotency_key = q.k AND x.created_at >= q.since
            ORDER BY x.seq DESC LIMIT 1) AS m`,
        tx<{ id: string }[]>`SELECT id FROM messages WHERE id = ANY(${pgArray(inputs.map((i) => i.m.id))}::text[])`,
      ]);
      const prevHead = (h as { seq: number }).seq;
      const priors = new Map<string, MessageRow>();
      for (const r of priorRows) {
        const k = keyed[r.i - 1] as AppendInput;
        const { i: _i, ...row } = r;
        priors.set(`${k.m.fromAccount}\n${k.m.idempotencyKey}\n${k.since}`, row);
      }
      const taken = new Set(takenRows.map((r) => r.id));
      let head = prevHead;
      const outcomes: (AppendOutcome | Error)[] = [];
      const created: StoredMessage[] = [];
      for (const { m, since } of inputs) {
        if (m.idempotencyKey !== null) {
          // Later entries of the batch see earlier ones (which are newer than any stored prior).
          const inBatch = created.findLast((c) => c.fromAccount === m.fromAccount && c.idempotencyKey === m.idempotencyKey && c.createdAt >= since);
          const prior =
            inBatch ??
            (priors.has(`${m.fromAccount}\n${m.idempotencyKey}\n${since}`) ? toMessage(priors.get(`${m.fromAccount}\n${m.idempotencyKey}\n${since}`) as MessageRow) : null);
          if (prior) {
            outcomes.push({
              kind: prior.fingerprint === m.fingerprint ? 'duplicate' : 'conflict',
              message: { ...prior, refs: prior.refs.map((r) => ({ ...r })), ...(prior.task ? { task: { ...prior.task } } : {}), ...(prior.via ? { via: { ...prior.via } } : {}) },
            });
            continue;
          }
        }
        if (taken.has(m.id)) {
          outcomes.push(new Error(`message id ${m.id} already exists`));
          continue;
        }
        taken.add(m.id);
        const params = messageParams(m);
        const stored = toMessage({ ...params, seq: ++head });
        created.push(stored);
        outcomes.push({ kind: 'created', message: stored });
      }
      if (created.length > 0) {
        const rows = created.map((c) => ({ seq: c.seq, ...messageParams(c) }));
        const perKey = new Map<string, number>();
        for (const c of created) perKey.set(c.toKey, (perKey.get(c.toKey) ?? 0) + 1);
        const keys = [...perKey.keys()].sort();
        // Pipelined: one round trip for the writes; counters in key order (no deadlock with acks).
        await Promise.all([
          tx.unsafe(WRITER_INDEXES),
          tx`INSERT INTO messages ${tx(rows)}`,
          indexRows(tx, created),
          tx`INSERT INTO mailbox_counts (to_key, total, unacked)
            SELECT k, n, n FROM unnest(${pgArray(keys)}::text[], ${pgArray(keys.map((k) => perKey.get(k) as number))}::bigint[]) AS x(k, n)
            ON CONFLICT (to_key) DO UPDATE SET total = mailbox_counts.total + excluded.total, unacked = mailbox_counts.unacked + excluded.unacked`,
          tx`UPDATE message_head SET seq = ${head} WHERE one = 1`,
          // The keyed form first (a daemon announces from it without a catch-up query), then the
          // plain head that daemons of earlier versions read; see commit-feed.ts.
          ...keyedPayload(prevHead, created).map((p) => tx`SELECT pg_notify(${this.channel}, ${p})`),
          tx`SELECT pg_notify(${this.channel}, ${String(head)})`,
        ]);
        if (this.beforeCommit) await this.beforeCommit(prevHead + 1, head);
      }
      computed.result = { outcomes, prevHead, head };
      return computed.result;
    });
  }
}
