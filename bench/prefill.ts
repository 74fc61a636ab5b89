// Prefills a stopped daemon's SQLite store with messages, through the store's own append path
// (openSqliteStore, the same group commit and counters as the daemon's sends), in batches of
// `batch` appends per transaction. Messages are spread over many recipient accounts; `readerShare`
// of them go to the measured reader, so its own mailbox is large too.
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { systemIds } from '../src/engine/clock.js';
import type { NewMessage } from '../src/store/types.js';
import { finish, readSpec } from './lib/spec.js';

interface Spec {
  dbPath: string;
  count: number;
  recipients: string[];
  reader: string;
  readerShare: number;
  from: string;
  batch: number;
}

async function main(s: Spec): Promise<{ appended: number; ms: number; perSec: number }> {
  const store = openSqliteStore({ path: s.dbPath });
  const body = 'Prefilled message body. '.repeat(8);
  const t0 = Date.now();
  let done = 0;
  let lastReport = 0;
  while (done < s.count) {
    const n = Math.min(s.batch, s.count - done);
    const pending: Promise<unknown>[] = [];
    const now = Date.now();
    for (let i = 0; i < n; i++) {
      const k = done + i;
      const to = k % Math.round(1 / s.readerShare) === 0 ? s.reader : (s.recipients[k % s.recipients.length] as string);
      const id = systemIds.messageId();
      const m: NewMessage = {
        id,
        threadId: id,
        fromAccount: s.from,
        fromSession: null,
        fromKind: 'agent',
        toAddress: to,
        toKey: `a:${to}`,
        subject: `prefill ${k}`,
        body,
        replyTo: null,
        correlation: null,
        refs: [],
        priority: 'normal',
        createdAt: now,
        idempotencyKey: null,
        fingerprint: null,
      };
      pending.push(store.appendMessage(m, 0));
    }
    await Promise.all(pending); // one event-loop turn: one transaction
    done += n;
    if (Date.now() - lastReport > 200) {
      lastReport = Date.now();
      process.stderr.write(`@progress ${done} ${s.count} messages prefilled\n`);
    }
  }
  await store.close();
  const ms = Date.now() - t0;
  return { appended: done, ms, perSec: Math.round((done / ms) * 1000) };
}

finish(main(readSpec<Spec>()));
